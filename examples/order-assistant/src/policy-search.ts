import { readFileSync } from 'node:fs';
import MiniSearch from 'minisearch';
import { z } from 'zod';

const policySchema = z.object({ id: z.string(), title: z.string(), content: z.string(), keywords: z.string() });
export type Policy = z.infer<typeof policySchema>;

const CJK = /[\u3400-\u9fff]/;

/**
 * Chinese has no spaces, so a plain word tokenizer would index whole sentences as
 * one token: split ASCII into words and CJK runs into single characters plus
 * bigrams, which is what small Chinese BM25 indexes usually do.
 */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const run of text.toLowerCase().match(/[\u3400-\u9fff]+|[a-z0-9.]+/g) ?? []) {
    if (!CJK.test(run)) {
      tokens.push(run);
      continue;
    }
    const chars = [...run];
    chars.forEach((c, i) => {
      tokens.push(c);
      if (i + 1 < chars.length) tokens.push(c + chars[i + 1]);
    });
  }
  return tokens;
}

/** BM25 retrieval over the demo policy knowledge base (MiniSearch does the ranking). */
export class PolicySearch {
  private readonly index = new MiniSearch<Policy>({
    fields: ['title', 'content', 'keywords'],
    storeFields: ['id', 'title', 'content'],
    tokenize,
    searchOptions: { boost: { title: 2, keywords: 2 }, tokenize },
  });

  constructor(policies: Policy[] = loadPolicies()) {
    this.index.addAll(policies);
  }

  search(query: string, limit = 3): Array<Pick<Policy, 'id' | 'title' | 'content'> & { score: number }> {
    return this.index
      .search(query)
      .slice(0, limit)
      .map((r) => ({ id: r.id as string, title: r.title as string, content: r.content as string, score: Number(r.score.toFixed(3)) }));
  }
}

export function loadPolicies(): Policy[] {
  const raw = readFileSync(new URL('./policies.json', import.meta.url), 'utf8');
  return z.array(policySchema).parse(JSON.parse(raw));
}
