declare module 'koa2' { import Koa from 'koa'; export default Koa }
