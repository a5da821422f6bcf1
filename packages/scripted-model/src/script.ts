/**
 * The order assistant, played from rules instead of a neural network. It reads the
 * conversation (user input + tool results so far) and returns the next move, so the
 * same conversation always gets the same reply — which is what tests and benchmarks need.
 */

export interface ScriptMessage {
  role: string;
  content?: string | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> | null;
  tool_call_id?: string;
}

export interface ScriptCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ScriptReply {
  content: string | null;
  toolCalls: ScriptCall[];
}

interface Observed {
  name: string;
  args: Record<string, unknown>;
  raw: string;
  json: unknown;
  /** Set while only a summary of the result was seen: its handle (read_result fetches the rest). */
  handle?: string;
}

/** What Rein sends instead of a large result under a context policy. */
interface SummaryView {
  summarized: true;
  handle: string;
  fields: Record<string, unknown>;
}
const isSummary = (json: unknown): json is SummaryView =>
  (json as SummaryView | null)?.summarized === true && typeof (json as SummaryView).handle === 'string';

type Lang = 'zh' | 'en';

const ORDER_NO = /(?<![A-Za-z0-9])([A-Za-z]\d{3,}|\d{6,})(?![A-Za-z0-9])/g;

/** A result as JSON; one an approver's edit ran is prefixed (`Approved by … with edited arguments … Result: `): its JSON follows. */
const parse = (text: string): unknown => {
  const edited = /^Approved by .* with edited arguments [\s\S]* Result: ([\s\S]*)$/.exec(text);
  try {
    return JSON.parse(edited ? (edited[1] as string) : text);
  } catch {
    return null;
  }
};

/** Rein delimits tool results as data (`<tool_result name="…">…</tool_result>`); read the data. */
const unwrap = (content: string) => /^<tool_result[^>]*>\n([\s\S]*)\n<\/tool_result>$/.exec(content)?.[1] ?? content;

function observations(messages: ScriptMessage[]): Observed[] {
  const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
  const out: Observed[] = [];
  for (const m of messages) {
    for (const c of m.tool_calls ?? [])
      calls.set(c.id, { name: c.function.name, args: (parse(c.function.arguments) ?? {}) as Record<string, unknown> });
    if (m.role === 'tool' && m.tool_call_id) {
      const call = calls.get(m.tool_call_id);
      const raw = unwrap(m.content ?? '');
      const json = parse(raw);
      if (!call) continue;
      if (call.name === 'read_result') {
        // The full text of a summarised result: it takes the summary's place.
        const summarised = out.find((o) => o.handle !== undefined && o.handle === call.args.handle);
        if (summarised) {
          summarised.raw = raw;
          summarised.json = parse(raw);
          delete summarised.handle;
        }
      } else if (isSummary(json)) out.push({ ...call, raw, json: json.fields, handle: json.handle });
      else out.push({ ...call, raw, json });
    }
  }
  return out;
}

/** The call that fetches a summarised result in full, when the scenario needs more than its key fields. */
const readInFull = (lang: Lang, o: Observed): ScriptReply =>
  call(say(lang, '这个结果只有摘要，我需要读取完整内容。', 'I only have a summary of this result; reading it in full.'), {
    name: 'read_result',
    arguments: { handle: o.handle },
  });

type OrderView = { orderNo: string; status: string; amount: number; customer: string; daysOverdue?: number; promisedDate?: string };
type PolicyView = { title: string; content: string };

const say = (lang: Lang, zh: string, en: string) => (lang === 'zh' ? zh : en);
const statusText = (lang: Lang, s: string) =>
  lang === 'zh' ? ({ not_shipped: '未发货', shipped: '已发货', delivered: '已签收', cancelled: '已取消' }[s] ?? s) : s.replace('_', ' ');
/** The policies are bilingual ("中文。English."): the Chinese part, for Chinese answers. */
const chinese = (content: string) => content.split(/(?<=。)\s*(?=[A-Z])/)[0] ?? content;
const call = (content: string, ...toolCalls: ScriptCall[]): ScriptReply => ({ content, toolCalls });
const answer = (content: string): ScriptReply => ({ content, toolCalls: [] });

function policyOf(o: Observed | undefined): PolicyView | undefined {
  return Array.isArray(o?.json) ? (o.json[0] as PolicyView | undefined) : undefined;
}

/** The late-order complaint: query → policy → ticket (approved by a human) → answer. */
function lateOrder(lang: Lang, orderNo: string, seen: Observed[], wantsNote = false): ScriptReply {
  const order = seen.find((o) => o.name === 'query_order');
  if (!order) {
    return call(
      say(lang, '我需要先查这个订单的状态，确认是否真的没发货。', 'First I need to check the order to confirm it really has not shipped.'),
      { name: 'query_order', arguments: { orderNo } },
    );
  }
  const o = order.json as OrderView | { error: string } | null;
  if (!o || 'error' in o)
    return answer(say(lang, `没有查到订单 ${orderNo}，请核对订单号。`, `I could not find order ${orderNo}; please check the number.`));
  if (o.status !== 'not_shipped') {
    return answer(
      say(
        lang,
        `订单 ${orderNo} 当前状态为「${statusText(lang, o.status)}」，并非未发货，无需补偿。`,
        `Order ${orderNo} is ${statusText(lang, o.status)}, so it is not a late shipment.`,
      ),
    );
  }
  const policy = seen.find((s) => s.name === 'search_policy');
  if (!policy) {
    return call(
      say(
        lang,
        `订单确实未发货，且已超承诺日期 ${o.daysOverdue} 天。我需要查一下公司的超时发货赔偿政策。`,
        `The order has not shipped and is ${o.daysOverdue} days past the promised date. I need the late-shipment compensation policy.`,
      ),
      { name: 'search_policy', arguments: { query: say(lang, '超时发货 赔偿标准', 'late shipment compensation') } },
    );
  }
  const top = policyOf(policy);
  const compensation = Math.min(Math.round(o.amount * 5) / 100, 50).toFixed(2);
  const ticket = seen.find((s) => s.name === 'create_ticket');
  if (!ticket) {
    return call(
      say(
        lang,
        `政策明确。订单金额 ${o.amount} 元，5% = ${compensation} 元，未超过上限 50 元。现在需要创建工单，创建工单是写操作，需要人工确认。`,
        `The policy is clear: 5% of ${o.amount} is ${compensation}, under the 50 cap. Creating a ticket is a write action and needs approval.`,
      ),
      {
        name: 'create_ticket',
        arguments: {
          orderNo,
          type: say(lang, '超时发货', 'late shipment'),
          priority: '高', // as the seeds write it; the tool normalises it
          suggestedAction: say(lang, `补偿 ${compensation} 元并催促仓库发货`, `Compensate ${compensation} and chase the warehouse to ship`),
        },
      },
    );
  }
  const created = ticket.json as { ticketId?: string } | null;
  const policyName = top?.title.split(' (')[0] ?? say(lang, '超时发货处理规范', 'late shipment policy');
  // Asked to note the ticket on the order: a write whose argument (the ticket id) only exists now.
  if (created?.ticketId && wantsNote && !seen.some((s) => s.name === 'update_order_note')) {
    return call(say(lang, '工单已创建，按要求在订单上备注工单号。', 'The ticket exists; noting it on the order as asked.'), {
      name: 'update_order_note',
      arguments: { orderNo, note: say(lang, `超时发货，已建工单 ${created.ticketId}`, `Late shipment; ticket ${created.ticketId} opened`) },
    });
  }
  if (created?.ticketId) {
    return answer(
      say(
        lang,
        `已为订单 ${orderNo} 创建加急工单 ${created.ticketId}。该订单已超承诺发货日期 ${o.daysOverdue} 天，按《${policyName}》可补偿 ${compensation} 元，并已催促仓库发货。`,
        `Created high-priority ticket ${created.ticketId} for order ${orderNo}. It is ${o.daysOverdue} days late; under "${policyName}" the customer gets ${compensation} in compensation, and the warehouse has been chased.`,
      ),
    );
  }
  return answer(
    say(
      lang,
      `工单未创建：${ticket.raw}。订单 ${orderNo} 已超期 ${o.daysOverdue} 天，按《${policyName}》可补偿 ${compensation} 元，请人工跟进。`,
      `The ticket was not created: ${ticket.raw}. Order ${orderNo} is ${o.daysOverdue} days late; under "${policyName}" ${compensation} compensation applies. A human should follow up.`,
    ),
  );
}

/** "查订单 A12345 状态，按政策说能否退": query_order, then search_policy, then answer. */
function orderAndPolicy(lang: Lang, orderNo: string, seen: Observed[]): ScriptReply {
  const order = seen.find((o) => o.name === 'query_order');
  if (!order) return call(say(lang, '先查订单状态。', 'First, the order status.'), { name: 'query_order', arguments: { orderNo } });
  const o = order.json as OrderView | { error: string } | null;
  if (!o || 'error' in o)
    return answer(say(lang, `没有查到订单 ${orderNo}，请核对订单号。`, `I could not find order ${orderNo}; please check the number.`));
  const policy = seen.find((s) => s.name === 'search_policy');
  if (!policy) {
    const query =
      o.status === 'not_shipped'
        ? say(lang, '未发货 退款', 'refund before shipment')
        : say(lang, '已发货 退货 退款', 'return refund after shipment');
    return call(
      say(
        lang,
        `订单状态为「${statusText(lang, o.status)}」，再查对应的退货退款政策。`,
        `The order is ${statusText(lang, o.status)}; now the matching return policy.`,
      ),
      { name: 'search_policy', arguments: { query } },
    );
  }
  const top = policyOf(policy);
  return answer(
    say(
      lang,
      `订单 ${orderNo} 当前状态：${statusText(lang, o.status)}（金额 ${o.amount} 元）。按《${top?.title.split(' (')[0] ?? '退货政策'}》：${top ? chinese(top.content) : '请咨询人工客服。'}`,
      `Order ${orderNo} is ${statusText(lang, o.status)} (amount ${o.amount}). Per "${top?.title ?? 'the return policy'}": ${top?.content ?? 'please ask a human agent.'}`,
    ),
  );
}

function policyQuestion(lang: Lang, input: string, seen: Observed[]): ScriptReply {
  const policy = seen.find((s) => s.name === 'search_policy');
  if (!policy)
    return call(say(lang, '这是政策问题，查知识库。', 'This is a policy question; searching the knowledge base.'), {
      name: 'search_policy',
      arguments: { query: input },
    });
  const top = policyOf(policy);
  if (!top)
    return answer(say(lang, '知识库中没有找到相关政策，已转人工客服。', 'I found no matching policy; a human agent will follow up.'));
  return answer(say(lang, `根据《${top.title.split(' (')[0]}》：${chinese(top.content)}`, `According to "${top.title}": ${top.content}`));
}

function deleteOrder(lang: Lang, orderNo: string | undefined, seen: Observed[]): ScriptReply {
  if (!seen.some((s) => s.name === 'delete_order')) {
    return call(say(lang, '用户要求删除订单，尝试调用删除工具。', 'The user wants the order deleted; trying a delete tool.'), {
      name: 'delete_order',
      arguments: { orderNo: orderNo ?? '' },
    });
  }
  return answer(
    say(
      lang,
      `抱歉，我无法删除订单${orderNo ? ` ${orderNo}` : ''}：这超出了我的权限，系统也不支持删除订单，只能取消。如需取消，请联系人工客服。`,
      `Sorry, I cannot delete order${orderNo ? ` ${orderNo}` : 's'}: that is outside what I am allowed to do, and orders can only be cancelled, not deleted. Please contact a human agent to cancel.`,
    ),
  );
}

/** "What is in order X?": the item list, which a summary only counts — so it is read in full first. */
function orderItems(lang: Lang, orderNo: string, seen: Observed[]): ScriptReply {
  const order = seen.find((o) => o.name === 'query_order');
  if (!order) return call(say(lang, '先查订单。', 'First, the order.'), { name: 'query_order', arguments: { orderNo } });
  if (order.handle) return readInFull(lang, order);
  const o = order.json as (OrderView & { items?: string[] }) | { error: string } | null;
  if (!o || 'error' in o || !Array.isArray(o.items))
    return answer(say(lang, `没有查到订单 ${orderNo}，请核对订单号。`, `I could not find order ${orderNo}; please check the number.`));
  const first = o.items.slice(0, 3).join('; ');
  return answer(
    say(
      lang,
      `订单 ${orderNo} 共 ${o.items.length} 件商品，前几件：${first}。`,
      `Order ${orderNo} has ${o.items.length} item(s); the first: ${first}.`,
    ),
  );
}

/** A runaway loop on purpose: asks for the same lookup again and again, whatever it sees. */
function keepChecking(lang: Lang, orderNo: string): ScriptReply {
  return call(say(lang, '还没发货，再查一次。', 'Not shipped yet; checking again.'), { name: 'query_order', arguments: { orderNo } });
}

/** Several order numbers: look them all up at once (parallel tool calls), then summarise. */
function compareOrders(lang: Lang, orderNos: string[], seen: Observed[]): ScriptReply {
  const found = seen.filter((s) => s.name === 'query_order');
  if (found.length === 0) {
    return call(
      say(lang, '同时查询这几个订单。', 'Looking up these orders in parallel.'),
      ...orderNos.map((orderNo) => ({ name: 'query_order', arguments: { orderNo } })),
    );
  }
  const lines = found.map((f) => {
    const o = f.json as OrderView | { error: string } | null;
    return !o || 'error' in o
      ? `${String(f.args.orderNo)}: ${say(lang, '未找到', 'not found')}`
      : `${o.orderNo}: ${statusText(lang, o.status)}, ${o.amount}`;
  });
  return answer(lines.join('\n'));
}

/** In a session the conversation opens with earlier turns: say what the user asked before. */
function recall(lang: Lang, earlier: string[]): ScriptReply {
  const last = earlier[earlier.length - 1];
  if (!last)
    return answer(
      say(lang, '这是我们对话的开始，您之前还没有问过问题。', 'This is the start of our conversation: you have not asked anything before.'),
    );
  return answer(
    say(
      lang,
      `您之前问的是：“${last}”（共 ${earlier.length} 个问题）。`,
      `Earlier you asked: "${last}" (${earlier.length} question(s) so far).`,
    ),
  );
}

/**
 * "Make good on late order 2024001": query → ticket → refund of the compensation →
 * e-mail to the customer → answer. Two writes before a third: what saga compensation undoes.
 */
function makeGood(lang: Lang, orderNo: string, seen: Observed[]): ScriptReply {
  const order = seen.find((o) => o.name === 'query_order');
  if (!order) return call(say(lang, '先查订单。', 'First, the order.'), { name: 'query_order', arguments: { orderNo } });
  const o = order.json as (OrderView & { email?: string }) | { error: string } | null;
  if (!o || 'error' in o)
    return answer(say(lang, `没有查到订单 ${orderNo}，请核对订单号。`, `I could not find order ${orderNo}; please check the number.`));
  const amount = Math.min(Math.round(o.amount * 5) / 100, 50);
  if (!seen.some((s) => s.name === 'create_ticket')) {
    return call(say(lang, '创建工单。', 'Open a ticket.'), {
      name: 'create_ticket',
      arguments: {
        orderNo,
        type: say(lang, '超时发货', 'late shipment'),
        priority: 'high',
        suggestedAction: say(lang, `退款 ${amount} 元`, `Refund ${amount}`),
      },
    });
  }
  if (!seen.some((s) => s.name === 'submit_refund')) {
    return call(say(lang, '提交补偿退款。', 'Refund the compensation.'), {
      name: 'submit_refund',
      arguments: { orderNo, amount, reason: say(lang, '超时发货补偿', 'late shipment compensation') },
    });
  }
  if (!seen.some((s) => s.name === 'send_email')) {
    return call(say(lang, '通知客户。', 'Tell the customer.'), {
      name: 'send_email',
      arguments: {
        to: o.email ?? 'customer@example.com',
        subject: say(lang, `订单 ${orderNo} 补偿`, `Order ${orderNo}: compensation`),
        body: say(lang, `已为您退款 ${amount} 元。`, `We refunded ${amount} for the delay.`),
      },
    });
  }
  return answer(
    say(
      lang,
      `订单 ${orderNo} 已建工单、退款 ${amount} 元并通知客户。`,
      `Order ${orderNo}: ticket opened, ${amount} refunded, customer told.`,
    ),
  );
}

/**
 * "Ask the refunds agent about late order 2024001": the order assistant calls its refunds
 * sub-agent (`call_refunds`, a child run) and answers with what it reports. Several orders
 * ("… orders 2024001 and A12345"): one call per order in the same reply, parallel children.
 */
function askRefunds(lang: Lang, orderNos: readonly string[], seen: Observed[]): ScriptReply {
  const reports = seen.filter((o) => o.name === 'call_refunds');
  if (reports.length === 0) {
    return call(
      say(lang, '交给退款专员。', 'Asking the refunds agent.'),
      ...orderNos.map((orderNo) => ({
        name: 'call_refunds',
        arguments: { input: `refund the late-shipment compensation on order ${orderNo}` },
      })),
    );
  }
  return answer(
    reports
      .map((reported, i) => {
        const orderNo = orderNos[i] ?? orderNos[0];
        const failed = (reported.json as { error?: string } | null)?.error === 'subagent_failed';
        return failed
          ? say(
              lang,
              `退款专员未能完成订单 ${orderNo} 的退款，已转人工。`,
              `The refunds agent could not refund order ${orderNo}; a person will follow up.`,
            )
          : say(lang, `退款专员回复：${reported.raw}`, `The refunds agent reports: ${reported.raw}`);
      })
      .join(' '),
  );
}

/** The refunds agent's part: "refund the late-shipment compensation on order N" → query → refund (approved) → answer. */
function refundCompensation(lang: Lang, orderNo: string, seen: Observed[]): ScriptReply {
  const order = seen.find((o) => o.name === 'query_order');
  if (!order) return call(say(lang, '先查订单。', 'First, the order.'), { name: 'query_order', arguments: { orderNo } });
  const o = order.json as OrderView | { error: string } | null;
  if (!o || 'error' in o) return answer(say(lang, `没有查到订单 ${orderNo}。`, `Order ${orderNo} does not exist.`));
  const amount = Math.min(Math.round(o.amount * 5) / 100, 50);
  const refund = seen.find((s) => s.name === 'submit_refund');
  if (!refund) {
    return call(say(lang, '提交补偿退款。', 'Refund the compensation.'), {
      name: 'submit_refund',
      arguments: { orderNo, amount, reason: say(lang, '超时发货补偿', 'late shipment compensation') },
    });
  }
  const id = (refund.json as { refundId?: string } | null)?.refundId;
  return answer(
    id
      ? say(lang, `已为订单 ${orderNo} 退款 ${amount} 元（${id}）。`, `Refunded ${amount} on order ${orderNo} (${id}).`)
      : say(lang, `订单 ${orderNo} 的退款未执行：${refund.raw}`, `The refund on order ${orderNo} did not go through: ${refund.raw}`),
  );
}

export function playOrderAssistant(messages: ScriptMessage[], tools: readonly string[] = []): ScriptReply {
  // The current turn starts at the last user message; what precedes it is a session's history.
  const start = messages.findLastIndex((m) => m.role === 'user');
  const input = messages[start]?.content ?? '';
  const earlier = messages.slice(0, Math.max(0, start)).flatMap((m) => (m.role === 'user' && m.content ? [m.content] : []));
  const lang: Lang = /[\u3400-\u9fff]/.test(input) ? 'zh' : 'en';
  const seen = observations(messages.slice(start));
  const orderNos = [...new Set([...input.matchAll(ORDER_NO)].map((m) => m[1] as string))];
  const orderNo = orderNos[0];

  if (/what did I (just )?ask|我(刚才|之前)问了什么/i.test(input)) return recall(lang, earlier);
  if (/删除|删掉|delete|remove/i.test(input)) return deleteOrder(lang, orderNo, seen);
  if (orderNo && /一直查|反复查|盯着|keep checking|until it ships/i.test(input)) return keepChecking(lang, orderNo);
  if (orderNo && /make good|补救/i.test(input)) return makeGood(lang, orderNo, seen);
  if (orderNo && tools.includes('call_refunds') && /refunds agent|退款专员/i.test(input)) return askRefunds(lang, orderNos, seen);
  if (orderNo && /^refund the late-shipment compensation/i.test(input)) return refundCompensation(lang, orderNo, seen);
  if (orderNo && /没发货|未发货|不发货|投诉|催|not (been )?shipped|hasn'?t shipped|late|complain/i.test(input))
    return lateOrder(lang, orderNo, seen, /备注|note it|add a note/i.test(input));
  if (orderNos.length > 1) return compareOrders(lang, orderNos, seen);
  if (orderNo && /哪些商品|什么商品|商品清单|which items|what items|list the items/i.test(input)) return orderItems(lang, orderNo, seen);
  if (orderNo) return orderAndPolicy(lang, orderNo, seen);
  if (/政策|退货|退款|换货|无理由|价保|policy|return|refund|exchange/i.test(input)) return policyQuestion(lang, input, seen);
  return answer(
    say(
      lang,
      '我是 Rein 的脚本化演示模型（不是大语言模型），只能演示订单助手的几个场景：订单投诉、订单状态与退货政策、政策问答。',
      "I am Rein's scripted demo model (not an LLM). I can only play the order assistant's demo scenarios: late-order complaints, order status with return policy, and policy questions.",
    ),
  );
}
