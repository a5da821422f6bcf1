import { createHash } from 'node:crypto';
import { appStateKey, type RedisClient } from '@rein/core';
import { z } from 'zod';

export const orderSchema = z.object({
  orderNo: z.string(),
  customer: z.string(),
  email: z.string(),
  status: z.enum(['not_shipped', 'shipped', 'delivered', 'cancelled']),
  amount: z.number(),
  items: z.array(z.string()),
  promisedDate: z.string(),
  shippedAt: z.string().optional(),
  note: z.string().optional(),
});
export type Order = z.infer<typeof orderSchema>;

export const ticketSchema = z.object({
  ticketId: z.string(),
  orderNo: z.string(),
  type: z.string(),
  priority: z.string(),
  suggestedAction: z.string(),
  status: z.enum(['created', 'cancelled']),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type Ticket = z.infer<typeof ticketSchema>;

export const refundSchema = z.object({
  refundId: z.string(),
  orderNo: z.string(),
  amount: z.number(),
  reason: z.string(),
  /** `paid_out`: finance has paid it; it can no longer be reversed automatically. */
  status: z.enum(['submitted', 'paid_out', 'reversed']),
  createdBy: z.string(),
  createdAt: z.string(),
});
export type Refund = z.infer<typeof refundSchema>;

export const emailSchema = z.object({
  emailId: z.string(),
  to: z.string(),
  subject: z.string(),
  body: z.string(),
  sentBy: z.string(),
  sentAt: z.string(),
});
export type Email = z.infer<typeof emailSchema>;

/** One undo the back office carried out (a cancelled ticket, a reversed refund), in the order they happened. */
export const undoSchema = z.object({ kind: z.enum(['ticket_cancelled', 'refund_reversed']), id: z.string(), at: z.string() });
export type Undo = z.infer<typeof undoSchema>;

const DAY = 86_400_000;

/** The demo orders; dates are relative to first use so "14 days overdue" stays true. */
function seedOrders(now: number): Order[] {
  const date = (offsetDays: number) => new Date(now + offsetDays * DAY).toISOString().slice(0, 10);
  return [
    {
      orderNo: '2024001',
      customer: '张三',
      email: 'zhangsan@example.com',
      status: 'not_shipped',
      amount: 899,
      items: ['智能手表 ×1'],
      promisedDate: date(-14),
    },
    {
      orderNo: 'A12345',
      customer: '李四',
      email: 'lisi@example.com',
      status: 'shipped',
      amount: 259,
      items: ['蓝牙耳机 ×1'],
      promisedDate: date(-3),
      shippedAt: date(-2),
    },
    {
      orderNo: '2024002',
      customer: '王五',
      email: 'wangwu@example.com',
      status: 'delivered',
      amount: 1299,
      items: ['空气净化器 ×1'],
      promisedDate: date(-10),
      shippedAt: date(-9),
    },
    {
      orderNo: '2024003',
      customer: '赵六',
      email: 'zhaoliu@example.com',
      status: 'not_shipped',
      amount: 129,
      items: ['手机壳 ×2'],
      promisedDate: date(2),
    },
    {
      // A wholesale order: its lookup is long (one line per item), which is what context policies are for.
      orderNo: '2024010',
      customer: '钱七',
      email: 'qianqi@example.com',
      status: 'shipped',
      amount: 18_600,
      items: Array.from({ length: 48 }, (_, i) => `SKU-${10_001 + i} 办公椅 office chair ×1`),
      promisedDate: date(-6),
      shippedAt: date(-5),
    },
  ];
}

/** Ids derived from the idempotency key: a replayed write finds the record it already made. */
const idFor = (prefix: string, idempotencyKey: string) =>
  `${prefix}${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 10).toUpperCase()}`;

/**
 * The order assistant's back office, in Redis, one copy per tenant (seeded on first
 * use). Writes are idempotent on the caller's key, so a replay never repeats them.
 */
export class DemoStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {}

  private keys(tenantId: string) {
    const key = (name: string) => appStateKey('order-assistant', tenantId, name);
    return {
      seeded: key('seeded'),
      orders: key('orders'),
      tickets: key('tickets'),
      refunds: key('refunds'),
      emails: key('emails'),
      /** Undo id (from the idempotency key) → undo, and the undos in order. */
      undone: key('undone'),
      undoLog: key('undo-log'),
    };
  }

  private async seeded(tenantId: string) {
    const k = this.keys(tenantId);
    if (await this.redis.exists(k.seeded)) return k;
    const pipeline = this.redis.multi();
    for (const order of seedOrders(this.now())) pipeline.hsetnx(k.orders, order.orderNo, JSON.stringify(order));
    pipeline.set(k.seeded, '1');
    await pipeline.exec();
    return k;
  }

  async order(tenantId: string, orderNo: string): Promise<Order | null> {
    const raw = await this.redis.hget((await this.seeded(tenantId)).orders, orderNo);
    return raw ? orderSchema.parse(JSON.parse(raw)) : null;
  }

  async tickets(tenantId: string, orderNo?: string): Promise<Ticket[]> {
    const all = (await this.redis.hvals((await this.seeded(tenantId)).tickets)).map((t) => ticketSchema.parse(JSON.parse(t)));
    return all.filter((t) => !orderNo || t.orderNo === orderNo);
  }

  async refunds(tenantId: string, orderNo?: string): Promise<Refund[]> {
    const all = (await this.redis.hvals((await this.seeded(tenantId)).refunds)).map((r) => refundSchema.parse(JSON.parse(r)));
    return all.filter((r) => !orderNo || r.orderNo === orderNo);
  }

  async emails(tenantId: string): Promise<Email[]> {
    return (await this.redis.hvals((await this.seeded(tenantId)).emails)).map((e) => emailSchema.parse(JSON.parse(e)));
  }

  async createTicket(tenantId: string, idempotencyKey: string, t: Omit<Ticket, 'ticketId' | 'status' | 'createdAt'>): Promise<Ticket> {
    const at = new Date(this.now());
    const ticket: Ticket = { ...t, ticketId: idFor('T', idempotencyKey), status: 'created', createdAt: at.toISOString() };
    return this.putOnce(this.keys(tenantId).tickets, ticket.ticketId, ticket, ticketSchema);
  }

  async submitRefund(tenantId: string, idempotencyKey: string, r: Omit<Refund, 'refundId' | 'status' | 'createdAt'>): Promise<Refund> {
    const at = new Date(this.now());
    const refund: Refund = { ...r, refundId: idFor('R', idempotencyKey), status: 'submitted', createdAt: at.toISOString() };
    return this.putOnce(this.keys(tenantId).refunds, refund.refundId, refund, refundSchema);
  }

  async sendEmail(tenantId: string, idempotencyKey: string, e: Omit<Email, 'emailId' | 'sentAt'>): Promise<Email> {
    const at = new Date(this.now());
    const email: Email = { ...e, emailId: idFor('E', idempotencyKey), sentAt: at.toISOString() };
    return this.putOnce(this.keys(tenantId).emails, email.emailId, email, emailSchema);
  }

  /** Cancels a ticket (the undo of creating it); once per idempotency key. */
  async cancelTicket(tenantId: string, idempotencyKey: string, ticketId: string): Promise<Ticket | null> {
    const k = await this.seeded(tenantId);
    return this.undo(k, k.tickets, ticketId, ticketSchema, idempotencyKey, 'ticket_cancelled', (t) => ({ ...t, status: 'cancelled' }));
  }

  /** Reverses a refund that was not paid out yet (the caller checks); once per idempotency key. */
  async reverseRefund(tenantId: string, idempotencyKey: string, refundId: string): Promise<Refund | null> {
    const k = await this.seeded(tenantId);
    return this.undo(k, k.refunds, refundId, refundSchema, idempotencyKey, 'refund_reversed', (r) => ({ ...r, status: 'reversed' }));
  }

  /** Finance paid the refund out (back office; not a tool). */
  async markPaidOut(tenantId: string, refundId: string): Promise<void> {
    const k = await this.seeded(tenantId);
    const raw = await this.redis.hget(k.refunds, refundId);
    if (raw) await this.redis.hset(k.refunds, refundId, JSON.stringify({ ...refundSchema.parse(JSON.parse(raw)), status: 'paid_out' }));
  }

  /** The undos carried out so far, oldest first. */
  async undoLog(tenantId: string): Promise<Undo[]> {
    return (await this.redis.lrange((await this.seeded(tenantId)).undoLog, 0, -1)).map((u) => undoSchema.parse(JSON.parse(u)));
  }

  private async undo<T>(
    k: ReturnType<DemoStore['keys']>,
    hash: string,
    id: string,
    schema: z.ZodType<T>,
    idempotencyKey: string,
    kind: Undo['kind'],
    change: (value: T) => T,
  ): Promise<T | null> {
    const raw = await this.redis.hget(hash, id);
    if (!raw) return null;
    const undo: Undo = { kind, id, at: new Date(this.now()).toISOString() };
    // The first call with this key does it; a replay finds it done.
    if (await this.redis.hsetnx(k.undone, idFor('U', idempotencyKey), JSON.stringify(undo))) {
      const changed = change(schema.parse(JSON.parse(raw)));
      await this.redis.multi().hset(hash, id, JSON.stringify(changed)).rpush(k.undoLog, JSON.stringify(undo)).exec();
      return changed;
    }
    return schema.parse(JSON.parse((await this.redis.hget(hash, id)) ?? 'null'));
  }

  /** Setting a note to a value is naturally idempotent. */
  async updateNote(tenantId: string, orderNo: string, note: string): Promise<Order | null> {
    const order = await this.order(tenantId, orderNo);
    if (!order) return null;
    const updated = { ...order, note };
    await this.redis.hset(this.keys(tenantId).orders, orderNo, JSON.stringify(updated));
    return updated;
  }

  private async putOnce<T>(key: string, id: string, value: T, schema: z.ZodType<T>): Promise<T> {
    const created = await this.redis.hsetnx(key, id, JSON.stringify(value));
    if (created) return value;
    return schema.parse(JSON.parse((await this.redis.hget(key, id)) ?? 'null'));
  }
}
