#!/usr/bin/env node
// `npm run demo`: the order assistant's late-order complaint against the running fleet
// (or one it starts), printed live step by step, approved when it parks, then the final
// answer. The same as `rein run "<input>" --approve --start-fleet`.
import { run } from '@rein/cli';

const input = process.argv.slice(2).join(' ') || '客户张三投诉订单 2024001 一直没发货，帮他处理一下';
await run(input, { approve: true, startFleet: true });
process.exit(0);
