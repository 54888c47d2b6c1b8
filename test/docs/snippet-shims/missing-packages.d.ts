// @koa/bodyparser and @koa/router are not dev dependencies of this repository, so their
// types (as they publish them: the parser's middleware, the router's `post` and `routes`)
// are declared here for the docs' Koa blocks; the rest of each block is checked against
// the real Koa types.
declare module '@koa/bodyparser' {
  import type { Middleware } from 'koa'
  export default function bodyParser(options?: object): Middleware
}

declare module '@koa/router' {
  import type { DefaultContext, DefaultState, Middleware } from 'koa'
  export default class Router<StateT = DefaultState, ContextT = DefaultContext> {
    constructor(options?: { prefix?: string })
    post(path: string, ...middleware: Array<Middleware<StateT, ContextT>>): this
    get(path: string, ...middleware: Array<Middleware<StateT, ContextT>>): this
    routes(): Middleware<StateT, ContextT>
    allowedMethods(): Middleware<StateT, ContextT>
  }
}

// @confluentinc/kafka-javascript is not a dev dependency either (its native build needs
// librdkafka); its KafkaJS-compatible client is declared as kafkajs's, which it follows.
declare module '@confluentinc/kafka-javascript' {
  import type { Consumer, Producer } from 'kafkajs'
  export namespace KafkaJS {
    class Kafka {
      constructor(config: { kafkaJS: { clientId: string; brokers: string[] } })
      consumer(config: { groupId?: string; kafkaJS?: object }): Consumer
      producer(config?: { kafkaJS?: object }): Producer
    }
  }
}
