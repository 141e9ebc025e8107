import type { Visit } from './entities/visit.entity.js';
import { modificationDateOf } from './visits-import.service.js';
import { visitFingerprint } from './visits.repository.js';

const visit = (score: number, modificationDate = ''): Visit => ({ clientId: 1001, visitScore: score, modificationDate, sections: [] }) as unknown as Visit;
const stored = (score: number, modificationDate: string) => ({ modificationDate, fingerprint: visitFingerprint(visit(score)) });

describe('modificationDateOf', () => {
  it("keeps a new visit's own date, or gives it now", () => {
    expect(modificationDateOf(visit(1, '2026-10-01T08:00:00'), true, undefined, '2026-11-25T10:00:00')).toBe('2026-10-01T08:00:00');
    expect(modificationDateOf(visit(1), false, undefined, '2026-11-25T10:00:00')).toBe('2026-11-25T10:00:00');
  });

  it("leaves an unchanged re-import's date, and moves a changed one's to its own later date or to now", () => {
    const before = stored(1, '2026-11-02T08:00:00');
    expect(modificationDateOf(visit(1), false, before, '2026-11-25T10:00:00')).toBe('2026-11-02T08:00:00');
    expect(modificationDateOf(visit(2, '2026-11-03T09:00:00'), true, before, '2026-11-25T10:00:00')).toBe('2026-11-03T09:00:00');
    expect(modificationDateOf(visit(2, '2026-11-01T09:00:00'), true, before, '2026-11-25T10:00:00')).toBe('2026-11-25T10:00:00');
    expect(modificationDateOf(visit(2), false, before, '2026-11-25T10:00:00')).toBe('2026-11-25T10:00:00');
  });

  it('moves a changed re-import a second past the stored date when now reads earlier (the hour clocks go back, in its second pass)', () => {
    // Written at 01:45 in the hour's first pass (BST); changed at 01:15 in its second (GMT).
    expect(modificationDateOf(visit(2), false, stored(1, '2026-10-25T01:45:11'), '2026-10-25T01:15:07')).toBe('2026-10-25T01:45:12');
    expect(modificationDateOf(visit(2), false, stored(1, '2026-12-31T23:59:59'), '2026-12-31T23:59:59')).toBe('2027-01-01T00:00:00');
    expect(modificationDateOf(visit(2), false, stored(1, '0001-01-01T00:00:00'), '0001-01-01T00:00:00')).toBe('0001-01-01T00:00:01');
    expect(modificationDateOf(visit(2), false, stored(1, '9999-12-31T23:59:59'), '2026-10-25T01:15:07')).toBe('9999-12-31T23:59:59');
  });
});
