import { jest } from '@jest/globals';
import type { RawResponse } from './raw-http.js';

/**
 * Helpers of the lane tests (requests answered before Express): each request is sent once
 * through Express's path and once through the lane, and the two answers are compared.
 */

/** Headers that differ between any two answers: the request id, the date, the rate limit's count. */
const PER_RESPONSE = new Set(['x-request-id', 'date', 'ratelimit', 'x-rate-limit-remaining', 'x-rate-limit-reset']);

/** A response's headers without those that differ between any two answers. */
export function stableHeaders(res: RawResponse): Record<string, unknown> {
  return Object.fromEntries(Object.entries(res.headers).filter(([name]) => !PER_RESPONSE.has(name)));
}

export interface Watch {
  /** What each call of `answer` resolved to, in order: true when the lane answered. */
  answered: boolean[];
  /** Makes `answer` leave every request to Express (the path the lane must agree with). */
  bypass: (on: boolean) => void;
}

/** Watches a lane's `answer`, which gives true when the lane answered and false when it left the request to Express. */
export function watchLane(target: { answer(...args: unknown[]): Promise<boolean> }): Watch {
  const original = target.answer.bind(target);
  const answered: boolean[] = [];
  let bypass = false;
  jest.spyOn(target, 'answer').mockImplementation(async (...args: unknown[]) => {
    const result = bypass ? false : await original(...args);
    answered.push(result);
    return result;
  });
  return { answered, bypass: (on) => (bypass = on) };
}
