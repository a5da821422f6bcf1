import { defineTool, type Tool, ToolError } from '@rein/core';
import { z } from 'zod';
import type { DemoStore, Order } from './demo-store.js';
import type { PolicySearch } from './policy-search.js';

const orderNo = z.string().trim().min(1).max(32).describe('Order number, e.g. "2024001" or "A12345"');

/** The seeds write priorities in Chinese (高/中/低); models may capitalise English ones. Both normalise to high/normal/low. */
const PRIORITY_WORDS: Record<string, string> = { 高: 'high', 中: 'normal', 低: 'low', medium: 'normal' };
const ticketPriority = z
  .preprocess(
    (v) => (typeof v === 'string' ? (PRIORITY_WORDS[v.trim().toLowerCase()] ?? v.trim().toLowerCase()) : v),
    z.enum(['high', 'normal', 'low']),
  )
  .describe('high for late shipments and wrong or missing items (高/中/低 are accepted too)');

const DAY = 86_400_000;
const withOverdue = (order: Order, now: number) => ({
  ...order,
  daysOverdue: order.status === 'not_shipped' ? Math.max(0, Math.floor((now - Date.parse(order.promisedDate)) / DAY)) : 0,
});

/** The order assistant's six tools, built over their back ends (docs/order-assistant.md). */
export function createOrderTools(deps: { store: DemoStore; policies: PolicySearch; now?: () => number }): Tool[] {
  const { store, policies } = deps;
  const now = deps.now ?? Date.now;
  const requireOrder = async (tenantId: string, no: string) => {
    const order = await store.order(tenantId, no);
    if (!order) throw new ToolError('order_not_found', `order ${no} does not exist`);
    return order;
  };

  return [
    defineTool({
      name: 'query_order',
      description:
        "Look up an order by its number. You MUST call this before saying anything about an order: it returns status, amount, customer, promised date, days overdue, and the order's tickets and refunds.",
      kind: 'read',
      parameters: z.object({ orderNo }),
      honoursIdempotencyKey: true,
      async execute({ orderNo }, ctx) {
        const order = await requireOrder(ctx.tenantId, orderNo);
        const [tickets, refunds] = await Promise.all([store.tickets(ctx.tenantId, orderNo), store.refunds(ctx.tenantId, orderNo)]);
        return { ...withOverdue(order, now()), tickets, refunds };
      },
    }),
    defineTool({
      name: 'search_policy',
      description:
        'Search the company policy knowledge base (returns, refunds, late shipments, tickets). Call it whenever an answer depends on policy; returns the top 3 matching policies.',
      kind: 'read',
      parameters: z.object({ query: z.string().trim().min(1).max(500).describe('What to look for, e.g. "超时发货 赔偿标准"') }),
      honoursIdempotencyKey: true,
      async execute({ query }) {
        return policies.search(query, 3);
      },
    }),
    defineTool({
      name: 'create_ticket',
      description:
        'Create a customer-service ticket for an order (write; a human approves it before it is created). Use after checking the order and the relevant policy.',
      kind: 'write',
      parameters: z.object({
        orderNo,
        type: z.string().trim().min(1).max(64).describe('Ticket type, e.g. "超时发货" (late shipment)'),
        priority: ticketPriority,
        suggestedAction: z.string().trim().min(1).max(500).describe('What the team should do, e.g. compensation amount'),
      }),
      honoursIdempotencyKey: true,
      // The seeds' flow: the requesting user confirms their own ticket (or an approver does).
      approval: (a) => ({
        risk: 'high',
        requiredRole: 'user',
        summary: `Create a ${a.priority}-priority "${a.type}" ticket on order ${a.orderNo}: ${a.suggestedAction}`,
        context: { order: a.orderNo, ticketType: a.type, priority: a.priority },
      }),
      async execute(a, ctx) {
        await requireOrder(ctx.tenantId, a.orderNo);
        return store.createTicket(ctx.tenantId, ctx.idempotencyKey, { ...a, createdBy: ctx.userId });
      },
      // Undo (saga compensation): cancel the ticket this call created.
      async compensate(_a, result, ctx) {
        const { ticketId } = result as { ticketId: string };
        const ticket = await store.cancelTicket(ctx.tenantId, ctx.idempotencyKey, ticketId);
        if (!ticket) throw new ToolError('ticket_not_found', `ticket ${ticketId} does not exist`);
        return { ticketId, status: ticket.status };
      },
    }),
    defineTool({
      name: 'submit_refund',
      description:
        'Submit a refund for an order (write; needs human approval, and a supervisor when the amount is over 500). The amount may not exceed what is left to refund.',
      kind: 'write',
      parameters: z.object({
        orderNo,
        amount: z.number().positive().max(1_000_000).describe('Refund amount in yuan, e.g. 44.95'),
        reason: z.string().trim().min(1).max(500),
      }),
      // Approvers decide refunds; they do not start them (separation of duties).
      allowedRoles: ['user', 'supervisor', 'admin'],
      honoursIdempotencyKey: true,
      approval: (a) =>
        a.amount > 500
          ? { risk: 'critical', requiredRole: 'supervisor', summary: `Refund ${a.amount.toFixed(2)} on order ${a.orderNo}: ${a.reason}` }
          : { risk: 'high', requiredRole: 'user', summary: `Refund ${a.amount.toFixed(2)} on order ${a.orderNo}: ${a.reason}` },
      async execute(a, ctx) {
        const order = await requireOrder(ctx.tenantId, a.orderNo);
        const refunded = (await store.refunds(ctx.tenantId, a.orderNo))
          .filter((r) => r.status !== 'reversed')
          .reduce((sum, r) => sum + r.amount, 0);
        if (a.amount > order.amount - refunded + 1e-9) {
          throw new ToolError(
            'refund_exceeds_order',
            `only ${(order.amount - refunded).toFixed(2)} of order ${a.orderNo} is left to refund`,
          );
        }
        return store.submitRefund(ctx.tenantId, ctx.idempotencyKey, { ...a, createdBy: ctx.userId });
      },
      // Undo: reverse the refund, unless finance already paid it out (then a person must claw it back).
      async compensate(a, result, ctx) {
        const { refundId } = result as { refundId: string };
        const refund = (await store.refunds(ctx.tenantId, a.orderNo)).find((r) => r.refundId === refundId);
        if (!refund) throw new ToolError('refund_not_found', `refund ${refundId} does not exist`);
        if (refund.status === 'paid_out') throw new ToolError('refund_paid_out', `refund ${refundId} was already paid out`);
        const reversed = await store.reverseRefund(ctx.tenantId, ctx.idempotencyKey, refundId);
        return { refundId, status: reversed?.status ?? refund.status };
      },
    }),
    defineTool({
      name: 'update_order_note',
      description: 'Replace the internal note on an order (write; needs human approval).',
      kind: 'write',
      parameters: z.object({ orderNo, note: z.string().trim().min(1).max(1000) }),
      honoursIdempotencyKey: true,
      approval: (a) => ({ risk: 'high', requiredRole: 'user', summary: `Set the note of order ${a.orderNo} to "${a.note}"` }),
      async execute(a, ctx) {
        const order = await store.updateNote(ctx.tenantId, a.orderNo, a.note);
        if (!order) throw new ToolError('order_not_found', `order ${a.orderNo} does not exist`);
        return { orderNo: order.orderNo, note: order.note };
      },
    }),
    defineTool({
      name: 'send_email',
      description: 'Send an e-mail to a customer (write; needs human approval). Keep it short and factual.',
      kind: 'write',
      parameters: z.object({
        to: z.string().email(),
        subject: z.string().trim().min(1).max(200),
        body: z.string().trim().min(1).max(5000),
      }),
      honoursIdempotencyKey: true,
      // Mail leaves the company: someone other than a plain requester must approve it.
      approval: (a) => ({ risk: 'high', requiredRole: 'approver', summary: `E-mail ${a.to}: "${a.subject}"` }),
      async execute(a, ctx) {
        return store.sendEmail(ctx.tenantId, ctx.idempotencyKey, { ...a, sentBy: ctx.userId });
      },
    }),
  ];
}
