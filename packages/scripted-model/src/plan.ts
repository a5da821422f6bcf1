import type { OfferedTool } from './any-tools.js';
import type { ScriptCall, ScriptMessage, ScriptReply } from './script.js';

/**
 * Plan mode, played by rules: asked for a plan (response_format named "plan"), the
 * scripted model writes one from the input and the offered tools; once Rein says the
 * plan is approved or accepted, it carries out exactly the steps Rein repeats (as an
 * approver may have edited them), one per turn, and then goes back to its script.
 */

export interface PlanStepView {
  step: number;
  action: string;
  args: Record<string, unknown>;
  desc: string;
  risk: 'low' | 'high';
}

/** What the request's response_format says about the plan it wants, or null when it wants none. */
export function planRequest(responseFormat: unknown): { maxSteps: number } | null {
  const f = responseFormat as { json_schema?: { name?: string; schema?: { properties?: { steps?: { maxItems?: number } } } } } | undefined;
  if (f?.json_schema?.name !== 'plan') return null;
  return { maxSteps: f.json_schema.schema?.properties?.steps?.maxItems ?? 6 };
}

const ORDER_NO = /(?<![A-Za-z0-9])([A-Za-z]\d{3,}|\d{6,})(?![A-Za-z0-9])/;
const COMPLAINT = /没发货|未发货|不发货|投诉|催|not (been )?shipped|hasn'?t shipped|late|complain/i;

/**
 * The order assistant's plans: a late-order complaint is looked up, checked against
 * policy and ticketed; any other order question is looked up and checked against
 * policy. What depends on a result not known yet (a note naming the new ticket) is
 * left out: the run does it off-plan, with an approval of its own.
 */
function orderPlan(input: string): Array<Omit<PlanStepView, 'step'>> | null {
  const orderNo = ORDER_NO.exec(input)?.[1];
  if (!orderNo) return null;
  const zh = /[\u3400-\u9fff]/.test(input);
  const steps: Array<Omit<PlanStepView, 'step'>> = [
    { action: 'query_order', args: { orderNo }, desc: zh ? '查询订单状态' : 'Look up the order', risk: 'low' },
    {
      action: 'search_policy',
      args: { query: COMPLAINT.test(input) ? (zh ? '超时发货 赔偿标准' : 'late shipment compensation') : input },
      desc: zh ? '查询相关政策' : 'Find the policy that applies',
      risk: 'low',
    },
  ];
  if (COMPLAINT.test(input)) {
    steps.push({
      action: 'create_ticket',
      args: {
        orderNo,
        type: zh ? '超时发货' : 'late shipment',
        priority: 'high',
        suggestedAction: zh ? '按超时发货政策补偿并催促仓库发货' : 'Compensate per the late-shipment policy and chase the warehouse',
      },
      desc: zh ? '创建加急工单（写操作）' : 'Open a high-priority ticket (a write)',
      risk: 'high',
    });
  }
  return steps;
}

/** A plan from the input and the offered tools, at most `maxSteps` long. */
export function writePlan(
  input: string,
  tools: OfferedTool[],
  maxSteps: number,
  anyToolArgs: (t: OfferedTool) => Record<string, unknown>,
): ScriptReply {
  const offered = new Set(tools.map((t) => t.name));
  const steps =
    (offered.has('query_order') ? orderPlan(input) : null) ??
    tools.map((t) => ({ action: t.name, args: anyToolArgs(t), desc: `(scripted) call ${t.name}`, risk: 'low' as const }));
  const plan = steps
    .filter((s) => offered.has(s.action))
    .slice(0, maxSteps)
    .map((s, i) => ({ step: i + 1, ...s }));
  return { content: JSON.stringify({ steps: plan }), toolCalls: [] };
}

/**
 * The next move of a run whose plan Rein has decided: the plan's next step, an answer
 * when the plan was not approved, or null once the plan is carried out (the script goes on).
 */
export function followPlan(messages: ScriptMessage[]): ScriptReply | null {
  const at = messages.findLastIndex(
    (m) => m.role === 'system' && /^Your plan (was approved|is accepted|was not approved)/.test(m.content ?? ''),
  );
  if (at < 0) return null;
  const note = messages[at]?.content ?? '';
  if (note.startsWith('Your plan was not approved')) {
    return {
      content: /[\u3400-\u9fff]/.test(messages.find((m) => m.role === 'user')?.content ?? '')
        ? '计划未获批准，我没有执行任何操作，已转人工跟进。'
        : 'The plan was not approved, so I did nothing; a person will follow up.',
      toolCalls: [],
    };
  }
  const steps = JSON.parse(note.slice(note.indexOf('['))) as Array<Pick<PlanStepView, 'step' | 'action' | 'args'>>;
  const made = messages.slice(at + 1).flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).length;
  const next = steps[made];
  if (!next) return null;
  const call: ScriptCall = { name: next.action, arguments: next.args };
  return { content: `Step ${next.step} of the plan.`, toolCalls: [call] };
}
