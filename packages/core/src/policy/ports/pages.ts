/** Where a page ended: the last member handed out and its score (creation time, ms). */
export interface PageCursor {
  at: number;
  id: string;
}

export interface PageQuery {
  limit: number;
  /** Scores strictly between these (ms). */
  after?: number;
  before?: number;
  cursor?: PageCursor;
}

export interface Page {
  ids: string[];
  next?: PageCursor;
}
