import { addDays, localDateTime } from '../common/clock.js';
import { CLIENTS, QUESTIONNAIRE } from './demo-catalogue.js';
import { createRandom, demoClients, demoMenus, demoReviews, demoVisits } from './demo-data.js';

interface Visit {
  visitId: number;
  visitDateTime: string;
  modificationDate: string;
  completedAt: string;
  visitType: string;
  visitScore: number;
  clientId: number;
}

const visits = (options: Parameters<typeof demoVisits>[0]): Visit[] => demoVisits(options) as unknown as Visit[];

describe('the demo catalogue (JSON)', () => {
  it('names two clients with their brands and 40 branches, each id once', () => {
    const clients = demoClients();
    expect(clients.map((c) => [c.id, c.name])).toEqual([
      [1001, 'Acme Dining Group'],
      [1002, 'Northern Taverns'],
    ]);
    const branches = clients.flatMap((c) => c.branches);
    expect(branches).toHaveLength(40);
    expect(new Set(branches.map((b) => b.id)).size).toBe(40);
    expect(branches[0]).toEqual({ id: 'BR-1001-0001', name: 'Acme Grill Leeds Briggate', branchCode: 'AG-LDS-01', brandId: 5 });
    // Every branch belongs to a brand of its own client.
    for (const client of clients) {
      const brands = new Set(client.brands.map((b) => b.id));
      expect(client.branches.every((b) => brands.has(b.brandId))).toBe(true);
    }
  });

  it('holds only question kinds and courses the generator knows, and rating bands down to 0', () => {
    const courses = ['Starter', 'Main', 'Dessert'];
    for (const question of QUESTIONNAIRE.sections.flatMap((s) => s.questions)) {
      expect(['yesno', 'rating', 'dish', 'text', 'name']).toContain(question.kind);
      if (question.kind === 'dish') expect(courses).toContain(question.course);
    }
    for (const brand of CLIENTS.flatMap((c) => c.brands)) expect(Object.keys(brand.dishes).sort()).toEqual([...courses].sort());
    const sectionNames = QUESTIONNAIRE.sections.map((s) => s.name);
    expect(QUESTIONNAIRE.alwaysAsked.every((name) => sectionNames.includes(name))).toBe(true);
    const bands = QUESTIONNAIRE.mysteryRatings.map((r) => r.from);
    expect(bands).toEqual([...bands].sort((a, b) => b - a));
    expect(bands.at(-1)).toBe(0);
  });

  it('dates the menus and their dish expiries in days from today', () => {
    const menus = demoMenus('2026-11-22');
    expect(menus.map((m) => [m.id, m.startDate, m.endDate])).toEqual([
      [101, '2026-10-08', null],
      [102, '2026-11-02', '2027-01-21'],
      [201, '2025-11-22', null],
    ]);
    const spritz = menus[0].dishes.find((d) => d.code === 'AG-DRK-01');
    expect(spritz).toMatchObject({
      order: 9,
      expiryDate: '2026-12-22',
      image: { file: 'AG-DRK-01.webp', format: 'webp', color: '#D4A017', width: 400 },
    });
    expect(() => demoMenus('2026-02-30')).toThrow("expected a calendar date yyyy-mm-dd: '2026-02-30'");
  });
});

describe('the demo visits generator', () => {
  it('is deterministic: the same arguments give the same visits, another seed others', () => {
    const first = visits({ today: '2026-07-01', days: 7 });
    expect(visits({ today: '2026-07-01', days: 7 })).toEqual(first);
    expect(visits({ today: '2026-07-01', days: 7, seed: 1 })).not.toEqual(first);
    const ids = first.map((v) => v.visitId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("gives a visit the id of its day, branch and place in the day, made on any day: a demo loaded again another day keeps each id its client's", () => {
    const earlier = visits({ today: '2026-07-01', days: 7 });
    const later = visits({ today: '2026-07-04', days: 7 });
    const branchOf = new Map(earlier.map((v) => [v.visitId, [v.clientId, (v as unknown as { branchId: string }).branchId]]));
    const shared = later.filter((v) => branchOf.has(v.visitId));
    expect(shared.length).toBeGreaterThan(50);
    for (const v of shared) expect([v.visitId, v.clientId, (v as unknown as { branchId: string }).branchId]).toEqual([v.visitId, ...branchOf.get(v.visitId)!]);
    // A day both made hold the same visits, at the same times: loaded again, none of the earlier load is left beside them.
    const ofDay = (all: Visit[], day: string): [number, string][] => all.filter((v) => v.visitDateTime.startsWith(day)).map((v) => [v.visitId, v.visitDateTime]);
    for (const day of ['2026-06-27', '2026-06-28', '2026-06-29', '2026-06-30']) {
      expect(ofDay(later, day).length).toBeGreaterThan(20);
      expect([day, ofDay(later, day)]).toEqual([day, ofDay(earlier, day)]);
    }
    // Each day's ids come after the day before's, whichever day the demo is made on.
    const firstOf = (all: Visit[], day: string): number => Math.min(...all.filter((v) => v.visitDateTime.startsWith(day)).map((v) => v.visitId));
    expect(firstOf(later, '2026-06-28')).toBe(firstOf(earlier, '2026-06-28'));
    expect(firstOf(earlier, '2026-06-25')).toBeLessThan(firstOf(earlier, '2026-06-26'));
  });

  it('covers the days before today only, modified before today began', () => {
    const today = '2026-03-31';
    const all = visits({ today, days: 10 });
    expect(all.length).toBeGreaterThan(200);
    const dates = new Set(all.map((v) => v.visitDateTime.slice(0, 10)));
    expect([...dates].sort()).toEqual(Array.from({ length: 10 }, (_, i) => addDays(today, i - 10)));
    expect(all.every((v) => v.modificationDate < `${today}T00:00:00` && v.modificationDate > v.visitDateTime)).toBe(true);
  });

  it('places completedAt in the configured zone, across a change of the clocks, and changes nothing else', () => {
    // 2026-03-29: London's clocks go forward (GMT to BST); New York is on EDT all along.
    const london = visits({ today: '2026-04-02', days: 8 });
    const newYork = visits({ today: '2026-04-02', days: 8, zone: 'America/New_York' });
    expect(newYork.map(({ completedAt: _, ...rest }) => rest)).toEqual(london.map(({ completedAt: _, ...rest }) => rest));
    const hoursApart = new Set<number>();
    london.forEach((visit, i) => {
      // Completed on the venue's wall clock between the visit and its last modification.
      const local = localDateTime('Europe/London', new Date(visit.completedAt));
      expect(local > visit.visitDateTime && local < visit.modificationDate).toBe(true);
      expect(localDateTime('America/New_York', new Date(newYork[i].completedAt))).toBe(local);
      hoursApart.add((Date.parse(newYork[i].completedAt) - Date.parse(visit.completedAt)) / 3_600_000);
    });
    expect([...hoursApart].sort()).toEqual([4, 5]);
  });

  it('re-scores the last three mystery visits of each client', () => {
    const all = visits({ today: '2026-07-01', days: 7 });
    const reviews = demoReviews(all as unknown as Record<string, unknown>[]) as unknown as Visit[];
    expect(reviews.map((r) => r.clientId)).toEqual([1001, 1001, 1001, 1002, 1002, 1002]);
    for (const review of reviews) {
      const original = all.find((v) => v.visitId === review.visitId)!;
      expect(original.visitType).toBe('MV');
      expect(Math.abs(review.visitScore - original.visitScore)).toBeGreaterThan(0);
    }
  });

  it('keeps the seeded randomness and the data set the benchmark builds on', () => {
    const random = createRandom(20_240_601);
    expect([random.next(), random.int(1, 6), random.float(0, 1, 2), random.chance(0.5), random.pick(['a', 'b', 'c'])]).toEqual([
      0.35344086796976626, 1, 0.69, true, 'b',
    ]);
    const bench = visits({ today: '2024-06-01', days: 28 });
    expect(bench).toHaveLength(1395);
    expect(bench[0]).toMatchObject({ visitId: 700_014_881, visitDateTime: '2024-05-04T13:05:00', completedAt: '2024-05-04T14:06:32Z' });
  });
});
