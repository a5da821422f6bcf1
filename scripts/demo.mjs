#!/usr/bin/env node
// `npm run demo` (`-- --tree` for a tree of agents): the order assistant's late-order complaint against the running fleet
// (or one it starts), printed live step by step, approved when it parks, then the final
// answer. The same as `npx rein run "<input>" --approve --start-fleet` (deciding as an approver), with the trace's
// labels in the example's language next to English.
import { run } from '@rein/cli';

const labels = {
  input: '用户输入 / input',
  step: (n) => `第 ${n} 轮 / step ${n}`,
  finalAnswer: '最终回答 / final answer',
  answers: '无 → 输出最终答案 / final answer',
};
// `--tree`: the order desk asks its refunds sub-agent (a child run, whose refund is approved); the parent's stream shows the child's events too.
const tree = process.argv.includes('--tree');
const words = process.argv.slice(2).filter((a) => a !== '--tree');
const input =
  words.join(' ') || (tree ? 'Ask the refunds agent about late order 2024001' : '客户张三投诉订单 2024001 一直没发货，帮他处理一下');
await run(input, { approve: true, startFleet: true, labels, ...(tree ? { agent: 'order-desk' } : {}) });
process.exit(0);
