/**
 * The demo data set: two hospitality groups with their brands and branches, a few months of
 * guest-experience visits and some menus. Pure and deterministic: the same arguments (and
 * seed) always give the same data. Nothing here reads the clock; `today` is a parameter.
 */

// ---------------------------------------------------------------------------------------------
// Seeded randomness
// ---------------------------------------------------------------------------------------------

export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** A number in [min, max), rounded to `decimals` places when given. */
  float(min: number, max: number, decimals?: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A normally distributed number (Box-Muller). */
  normal(mean: number, sd: number): number;
  /** `count` distinct items, in their original order. */
  sample<T>(items: readonly T[], count: number): T[];
}

/** A small seeded PRNG (mulberry32) with the helpers the generator needs. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    float: (min, max, decimals) => {
      const value = min + next() * (max - min);
      return decimals === undefined ? value : round(value, decimals);
    },
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('cannot pick from an empty list');
      return items[int(0, items.length - 1)];
    },
    normal: (mean, sd) => {
      const u = 1 - next();
      const v = next();
      return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
    sample: <T>(items: readonly T[], count: number): T[] => {
      const indexes = items.map((_, i) => i);
      const n = Math.max(0, Math.min(count, items.length));
      for (let i = 0; i < n; i++) {
        const j = int(i, indexes.length - 1);
        [indexes[i], indexes[j]] = [indexes[j], indexes[i]];
      }
      return indexes
        .slice(0, n)
        .sort((a, b) => a - b)
        .map((i) => items[i]);
    },
  };
}

function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

// ---------------------------------------------------------------------------------------------
// Dates (wall-clock values handled as UTC so that no local time zone leaks in)
// ---------------------------------------------------------------------------------------------

const MINUTE = 60_000;
const DAY = 86_400_000;

function parseDate(date: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date) {
    throw new Error(`expected a calendar date yyyy-mm-dd: '${date}'`);
  }
  return ms;
}

function addDays(date: string, days: number): string {
  return formatDate(parseDate(date) + days * DAY);
}

function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function formatLocal(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/** The last Sunday of a month (0-based) as a UTC midnight. */
function lastSunday(year: number, month: number): number {
  const last = Date.UTC(year, month + 1, 0);
  return last - new Date(last).getUTCDay() * DAY;
}

/**
 * The UTC instant of a UK wall-clock time: British Summer Time (UTC+1) runs from the last
 * Sunday of March to the last Sunday of October. The changeover hour itself is not modelled
 * (no visit happens in the small hours).
 */
function londonToUtc(localMs: number): number {
  const year = new Date(localMs).getUTCFullYear();
  const summer = localMs >= lastSunday(year, 2) + 2 * 60 * MINUTE && localMs < lastSunday(year, 9) + 2 * 60 * MINUTE;
  return summer ? localMs - 60 * MINUTE : localMs;
}

// ---------------------------------------------------------------------------------------------
// Clients, brands and branches
// ---------------------------------------------------------------------------------------------

export interface DemoClient {
  id: number;
  name: string;
  brands: { id: number; name: string }[];
  branches: { id: string; name: string; branchCode: string | null; brandId: number }[];
}

type Course = 'Starter' | 'Main' | 'Dessert';

interface BrandProfile {
  id: number;
  clientId: number;
  name: string;
  /** How the brand's branches are named ("The Fox Keswick Main Street"). */
  branchPrefix: string;
  codePrefix: string;
  dishes: Record<Course, readonly string[]>;
  /** [town, locality, three-letter town code, branchCode present]. */
  sites: readonly (readonly [string, string, string, boolean?])[];
}

const CLIENTS = [
  { id: 1001, name: 'Acme Dining Group' },
  { id: 1002, name: 'Northern Taverns' },
] as const;

const BRANDS: readonly BrandProfile[] = [
  {
    id: 5,
    clientId: 1001,
    name: 'Acme Grill',
    branchPrefix: 'Acme Grill',
    codePrefix: 'AG',
    dishes: {
      Starter: ['Crispy calamari', 'Garlic mushrooms', 'Chicken wings', 'Prawn cocktail'],
      Main: ['8oz sirloin steak', '10oz ribeye steak', 'Classic cheeseburger', 'BBQ half chicken', 'Grilled sea bass'],
      Dessert: ['Sticky toffee pudding', 'Chocolate brownie', 'New York cheesecake'],
    },
    sites: [
      ['Leeds', 'Briggate', 'LDS'],
      ['Leeds', 'The Headrow', 'LDS'],
      ['Manchester', 'Deansgate', 'MAN'],
      ['York', 'Stonegate', 'YRK'],
      ['Sheffield', 'Division Street', 'SHF'],
      ['Nottingham', 'Old Market Square', 'NOT'],
      ['Birmingham', 'Brindleyplace', 'BHM'],
      ['Liverpool', 'Albert Dock', 'LIV'],
      ['Bristol', 'Harbourside', 'BRS'],
      ['Newcastle', 'Grey Street', 'NCL'],
    ],
  },
  {
    id: 6,
    clientId: 1001,
    name: 'Acme Pizzeria',
    branchPrefix: 'Acme Pizzeria',
    codePrefix: 'AP',
    dishes: {
      Starter: ['Garlic bread', 'Arancini', 'Bruschetta'],
      Main: [
        'Margherita pizza',
        'Pepperoni pizza',
        'Quattro formaggi pizza',
        'Spaghetti carbonara',
        'Lasagne al forno',
      ],
      Dessert: ['Tiramisu', 'Panna cotta', 'Affogato'],
    },
    sites: [
      ['Oxford', 'Cornmarket', 'OXF'],
      ['Cambridge', 'Market Hill', 'CAM'],
      ['Bath', 'Milsom Street', 'BTH'],
      ['Brighton', 'The Lanes', 'BTN'],
      ['Reading', 'Broad Street', 'RDG'],
      ['Cheltenham', 'Promenade', 'CHT'],
      ['Exeter', 'Cathedral Green', 'EXE'],
      ['Manchester', 'Spinningfields', 'MAN'],
    ],
  },
  {
    id: 7,
    clientId: 1001,
    name: 'Harbour Kitchen',
    branchPrefix: 'Harbour Kitchen',
    codePrefix: 'HK',
    dishes: {
      Starter: ['Cornish crab on toast', 'Salt and pepper squid', 'Smoked mackerel pâté', 'Mussels in cider'],
      Main: ['Beer-battered haddock and chips', 'Pan-fried hake', 'Seafood linguine', 'Fish pie'],
      Dessert: ['Eton mess', 'Lemon tart', 'Clotted cream ice cream'],
    },
    sites: [
      ['Whitby', 'Harbour', 'WBY'],
      ['Falmouth', 'Arwenack Street', 'FAL'],
      ['Padstow', 'The Quay', 'PDS'],
      ['Brixham', 'The Quay', 'BXM', false],
      ['Scarborough', 'Foreshore Road', 'SCB'],
    ],
  },
  {
    id: 21,
    clientId: 1002,
    name: 'The Crown & Anchor',
    branchPrefix: 'The Crown & Anchor',
    codePrefix: 'CA',
    dishes: {
      Starter: ['Soup of the day', 'Scotch egg', 'Ham hock terrine'],
      Main: ['Steak and ale pie', 'Fish and chips', 'Bangers and mash', 'Sunday roast beef', 'Chicken tikka masala'],
      Dessert: ['Apple crumble', 'Sticky toffee pudding', 'Bread and butter pudding'],
    },
    sites: [
      ['Durham', 'Market Place', 'DUR'],
      ['Harrogate', 'Montpellier Quarter', 'HGT'],
      ['Chester', 'Eastgate Street', 'CHR'],
      ['Kendal', 'Highgate', 'KEN'],
      ['Lincoln', 'Steep Hill', 'LIN'],
      ['Canterbury', 'High Street', 'CNT'],
      ['Norwich', 'Tombland', 'NWC'],
      ['Ludlow', 'Broad Street', 'LUD'],
      ['Hexham', 'Market Place', 'HEX'],
    ],
  },
  {
    id: 22,
    clientId: 1002,
    name: 'Fox Inns',
    branchPrefix: 'The Fox',
    codePrefix: 'FI',
    dishes: {
      Starter: ['Black pudding bon bons', 'Whitebait', 'Potted shrimps'],
      Main: [
        'Braised lamb shank',
        'Gammon, egg and chips',
        'Cumberland sausage ring',
        'Beef and Guinness stew',
        'Mushroom and leek pie',
      ],
      Dessert: ['Treacle tart', 'Chocolate fudge cake', 'Eton mess'],
    },
    sites: [
      ['Keswick', 'Main Street', 'KES'],
      ['Ambleside', 'Lake Road', 'AMB'],
      ['Stratford-upon-Avon', 'Sheep Street', 'SUA'],
      ['Windsor', 'Peascod Street', 'WND'],
      ['Henley-on-Thames', 'Hart Street', 'HOT', false],
      ['Derby', 'Friar Gate', 'DBY'],
      ['Leicester', 'Market Street', 'LCS'],
      ['York', 'Micklegate', 'YRK'],
    ],
  },
];

interface BranchProfile {
  id: string;
  name: string;
  branchCode: string | null;
  clientId: number;
  brand: BrandProfile;
  town: string;
}

function branchProfiles(): BranchProfile[] {
  const profiles: BranchProfile[] = [];
  for (const client of CLIENTS) {
    let number = 0;
    for (const brand of BRANDS.filter((b) => b.clientId === client.id)) {
      const perTown = new Map<string, number>();
      for (const [town, locality, townCode, hasCode] of brand.sites) {
        number += 1;
        const sequence = (perTown.get(townCode) ?? 0) + 1;
        perTown.set(townCode, sequence);
        profiles.push({
          id: `BR-${client.id}-${String(number).padStart(4, '0')}`,
          name: `${brand.branchPrefix} ${town} ${locality}`,
          branchCode: hasCode === false ? null : `${brand.codePrefix}-${townCode}-${String(sequence).padStart(2, '0')}`,
          clientId: client.id,
          brand,
          town,
        });
      }
    }
  }
  return profiles;
}

/** The demo clients with their brands and branches (branches in the branch import shape). */
export function demoClients(): DemoClient[] {
  const branches = branchProfiles();
  return CLIENTS.map((client) => ({
    id: client.id,
    name: client.name,
    brands: BRANDS.filter((b) => b.clientId === client.id).map((b) => ({ id: b.id, name: b.name })),
    branches: branches
      .filter((b) => b.clientId === client.id)
      .map((b) => ({ id: b.id, name: b.name, branchCode: b.branchCode, brandId: b.brand.id })),
  }));
}

// ---------------------------------------------------------------------------------------------
// Questionnaires
// ---------------------------------------------------------------------------------------------

type QuestionKind = 'yesno' | 'rating' | 'dish' | 'text' | 'name';

interface QuestionTemplate {
  subject: string;
  tag: string | null;
  kind: QuestionKind;
  course?: Course;
}

interface SectionTemplate {
  name: string;
  category: string;
  questions: readonly QuestionTemplate[];
  /** Free-text answers by how the visit went. */
  good: readonly string[];
  bad: readonly string[];
}

const SECTIONS: readonly SectionTemplate[] = [
  {
    name: 'Arrival & Welcome',
    category: 'Welcome',
    questions: [
      { subject: 'Were you greeted within two minutes of arriving?', tag: 'WELCOME_TIMELY', kind: 'yesno' },
      { subject: 'Was the greeting warm and genuine?', tag: 'WELCOME_FRIENDLY', kind: 'yesno' },
      { subject: 'Was your booking found without difficulty?', tag: 'WELCOME_BOOKING', kind: 'yesno' },
      { subject: 'Were you offered a choice of table?', tag: 'WELCOME_TABLE_CHOICE', kind: 'yesno' },
      { subject: 'How would you rate the welcome you received?', tag: 'WELCOME_OVERALL', kind: 'rating' },
      { subject: 'Please describe your arrival.', tag: null, kind: 'text' },
    ],
    good: [
      'We were greeted straight away with a smile and shown to a lovely table by the window.',
      'The host remembered our booking name and made us feel very welcome.',
      'A friendly welcome at the door and our coats were taken without asking.',
    ],
    bad: [
      'We waited at the door for around ten minutes before anyone acknowledged us.',
      'The host seemed distracted and could not find our booking at first.',
      'Nobody greeted us; we had to find a member of staff ourselves.',
    ],
  },
  {
    name: 'Food Quality',
    category: 'Food',
    questions: [
      { subject: 'How would you rate your starter?', tag: 'FOOD_STARTER', kind: 'dish', course: 'Starter' },
      { subject: 'How would you rate your main course?', tag: 'FOOD_MAIN', kind: 'dish', course: 'Main' },
      { subject: 'How would you rate your dessert?', tag: 'FOOD_DESSERT', kind: 'dish', course: 'Dessert' },
      { subject: 'Was your food served at the right temperature?', tag: 'FOOD_TEMPERATURE', kind: 'yesno' },
      { subject: 'Did the food match its description on the menu?', tag: 'FOOD_AS_DESCRIBED', kind: 'yesno' },
      { subject: 'Please tell us about your meal.', tag: null, kind: 'text' },
    ],
    good: [
      'The {dish} was cooked perfectly and beautifully presented.',
      'Generous portions and everything arrived piping hot. The {dish} was a highlight.',
      'Really fresh ingredients; the {dish} was one of the best we have had.',
    ],
    bad: [
      'The {dish} arrived lukewarm and the chips were soggy.',
      'The {dish} was overcooked and lacked seasoning.',
      'Our mains came out at different times and the {dish} had clearly been sitting under the lights.',
    ],
  },
  {
    name: 'Drinks',
    category: 'Drinks',
    questions: [
      { subject: 'Were drinks served within five minutes of ordering?', tag: 'DRINKS_TIMELY', kind: 'yesno' },
      { subject: 'How would you rate the quality of your drinks?', tag: 'DRINKS_QUALITY', kind: 'rating' },
      { subject: 'Were you offered another drink before your glass was empty?', tag: 'DRINKS_UPSELL', kind: 'yesno' },
      { subject: 'Were drinks served at the correct temperature?', tag: 'DRINKS_TEMPERATURE', kind: 'yesno' },
      { subject: 'Any comments about your drinks?', tag: null, kind: 'text' },
    ],
    good: [
      'The cocktails were excellent and the bartender recommended a great wine.',
      'Drinks came quickly and the pint was perfectly kept.',
      'Good choice of alcohol-free options and they were served promptly.',
    ],
    bad: [
      'The wine was warm and we had to ask twice for a refill.',
      'Our drinks took over fifteen minutes to arrive.',
      'The lager was flat and the glass was not clean.',
    ],
  },
  {
    name: 'Service',
    category: 'Service',
    questions: [
      { subject: 'Was your server attentive throughout the meal?', tag: 'SERVICE_ATTENTIVE', kind: 'yesno' },
      { subject: 'Did your server know the menu well?', tag: 'SERVICE_MENU_KNOWLEDGE', kind: 'yesno' },
      { subject: 'Did anyone check back shortly after the food arrived?', tag: 'SERVICE_CHECK_BACK', kind: 'yesno' },
      { subject: 'How would you rate the speed of service?', tag: 'SERVICE_SPEED', kind: 'rating' },
      { subject: 'How would you rate the friendliness of the team?', tag: 'SERVICE_FRIENDLY', kind: 'rating' },
      { subject: "What was your server's name?", tag: 'SERVICE_SERVER_NAME', kind: 'name' },
      { subject: 'Please tell us about the service you received.', tag: null, kind: 'text' },
    ],
    good: [
      'Our server was fantastic: friendly, knowledgeable and never intrusive.',
      'Service was quick and the team clearly worked well together.',
      'The staff went out of their way to make our celebration special.',
    ],
    bad: [
      'Service was very slow and we struggled to get anyone’s attention.',
      'Our server did not know what was in the dishes and had to keep checking.',
      'Nobody checked on us after the food arrived.',
    ],
  },
  {
    name: 'Cleanliness',
    category: 'Cleanliness',
    questions: [
      { subject: 'Was your table clean and properly laid?', tag: 'CLEAN_TABLE', kind: 'yesno' },
      { subject: 'Were the toilets clean and well stocked?', tag: 'CLEAN_TOILETS', kind: 'yesno' },
      { subject: 'Was the entrance clean and tidy?', tag: 'CLEAN_ENTRANCE', kind: 'yesno' },
      { subject: 'How would you rate the overall cleanliness?', tag: 'CLEAN_OVERALL', kind: 'rating' },
    ],
    good: ['Spotless throughout, including the toilets.', 'Tables were cleared and reset quickly.'],
    bad: ['The toilets had run out of paper towels.', 'Our table was sticky and there were crumbs on the seats.'],
  },
  {
    name: 'Ambience',
    category: 'Atmosphere',
    questions: [
      { subject: 'Was the music at a comfortable volume?', tag: 'AMBIENCE_MUSIC', kind: 'yesno' },
      { subject: 'Was the temperature comfortable?', tag: 'AMBIENCE_TEMPERATURE', kind: 'yesno' },
      { subject: 'Was the lighting appropriate?', tag: 'AMBIENCE_LIGHTING', kind: 'yesno' },
      { subject: 'How would you rate the atmosphere?', tag: 'AMBIENCE_OVERALL', kind: 'rating' },
      { subject: 'Please describe the atmosphere during your visit.', tag: null, kind: 'text' },
    ],
    good: [
      'A lovely relaxed atmosphere with a real buzz on a Friday night.',
      'Cosy and warm, with the fire lit and good background music.',
      'Nicely decorated and comfortable; perfect for a family meal.',
    ],
    bad: [
      'The music was far too loud to hold a conversation.',
      'It was freezing near the door and the heating did not seem to be on.',
      'The room felt tired and half the lights were not working.',
    ],
  },
  {
    name: 'Value',
    category: 'Value',
    questions: [
      { subject: 'How would you rate the value for money?', tag: 'VALUE_OVERALL', kind: 'rating' },
      { subject: 'Was the bill accurate?', tag: 'VALUE_BILL_ACCURATE', kind: 'yesno' },
      { subject: 'Was the bill presented promptly when requested?', tag: 'VALUE_BILL_PROMPT', kind: 'yesno' },
      { subject: 'Were the portion sizes fair for the price?', tag: 'VALUE_PORTIONS', kind: 'yesno' },
    ],
    good: ['Very reasonable for the quality of food.', 'The midweek set menu was excellent value.'],
    bad: ['Expensive for what we received.', 'We were charged for a dessert we never ordered.'],
  },
  {
    name: 'Departure',
    category: 'Departure',
    questions: [
      { subject: 'Were you thanked and said goodbye to as you left?', tag: 'DEPARTURE_FAREWELL', kind: 'yesno' },
      { subject: 'Were you invited to return?', tag: 'DEPARTURE_INVITE', kind: 'yesno' },
      { subject: 'How would you rate your overall experience?', tag: 'DEPARTURE_OVERALL', kind: 'rating' },
      { subject: 'Is there anything else you would like to tell us?', tag: null, kind: 'text' },
    ],
    good: [
      'The manager came over to thank us as we left. A great evening.',
      'Staff waved us off and said they hoped to see us again soon.',
    ],
    bad: ['Nobody said goodbye; the staff were chatting at the bar.', 'We had to go to the bar to pay and leave.'],
  },
  {
    name: 'Allergens & Dietary Needs',
    category: 'Allergens',
    questions: [
      { subject: 'Did your server ask about allergies or dietary requirements?', tag: 'ALLERGEN_ASKED', kind: 'yesno' },
      { subject: 'Was allergen information readily available?', tag: 'ALLERGEN_INFO', kind: 'yesno' },
      { subject: 'Were dietary options clearly marked on the menu?', tag: 'ALLERGEN_MENU_MARKED', kind: 'yesno' },
      {
        subject: 'How confident were you that your dietary needs were handled safely?',
        tag: 'ALLERGEN_CONFIDENCE',
        kind: 'rating',
      },
    ],
    good: [
      'The chef came out to talk through my coeliac requirements. Very reassuring.',
      'Gluten-free and vegan options were clearly marked.',
    ],
    bad: [
      'I mentioned a nut allergy and nobody checked with the kitchen.',
      'The allergen folder was out of date.',
    ],
  },
];

const ALWAYS_ASKED = new Set(['Food Quality', 'Service']);

const SERVER_NAMES = [
  'Sophie', 'Jack', 'Amelia', 'Oliver', 'Chloe', 'Harry', 'Megan', 'Tom', 'Priya', 'Callum',
  'Ellie', 'Daniel', 'Grace', 'Kieran', 'Hannah', 'Josh', 'Aisha', 'Liam', 'Zoe', 'Ben',
] as const;

const PROMOTER_COMMENTS = [
  'Fantastic evening at {place}; we will definitely be back.',
  'The {dish} was outstanding and the team could not do enough for us.',
  'Best meal we have had in {place} for a long time. Highly recommended.',
  'Lovely staff, great food and a really welcoming atmosphere.',
  'Brought my parents for their anniversary and everything was perfect.',
  'Always reliable. The {dish} is the reason we keep coming back.',
] as const;

const PASSIVE_COMMENTS = [
  'Good food overall, although service was a little slow at busy times.',
  'Nice meal, but the {dish} was not quite as good as last time.',
  'Pleasant visit. A bit noisy, but the food made up for it.',
  'Decent value and friendly staff; nothing special but we enjoyed it.',
  'The food was good but we waited a while for the bill.',
] as const;

const DETRACTOR_COMMENTS = [
  'Disappointing: the {dish} was cold and it took ages to get anyone’s attention.',
  'Too expensive for the quality. We will not be rushing back to {place}.',
  'Our booking was lost and we had to wait thirty minutes for a table.',
  'Service was poor and nobody apologised when our order was wrong.',
  'The place needs a deep clean; the toilets were in a bad state.',
] as const;

// ---------------------------------------------------------------------------------------------
// Visits
// ---------------------------------------------------------------------------------------------

type VisitType = 'MV' | 'OF' | 'TA';

const FIRST_VISIT_ID = 700_000_001;
const DEFAULT_SEED = 20_241_001;
/** Expected visits per branch on an average day, before the weekday and branch factors. */
const DAILY_VISITS = 1.25;
/** Sunday first, as Date.getUTCDay counts. */
const WEEKDAY_FACTORS = [1.1, 0.75, 0.8, 0.9, 1.0, 1.25, 1.4] as const;

interface BranchTraits {
  traffic: number;
  quality: number;
}

/** A few branches stand out, so the demo has something to find. */
const QUALITY_OVERRIDES: Record<string, number> = {
  'HK-PDS-01': 0.93,
  'AG-NCL-01': 0.6,
  'CA-LUD-01': 0.9,
  'FI-DBY-01': 0.64,
};

/**
 * Visit import records, one per visit, for each day from `today - days` to yesterday
 * (today itself is never included). Dates and times are UK wall-clock values.
 */
export function demoVisits(options: { today: string; days: number; seed?: number }): Record<string, unknown>[] {
  const { today, days } = options;
  const todayMs = parseDate(today);
  if (!Number.isSafeInteger(days) || days < 0) throw new Error(`days must be a non-negative integer: ${days}`);
  const random = createRandom(options.seed ?? DEFAULT_SEED);
  const branches = branchProfiles();
  const traits = new Map<string, BranchTraits>(
    branches.map((b) => {
      const quality = QUALITY_OVERRIDES[b.branchCode ?? ''] ?? random.float(0.72, 0.88);
      return [b.id, { traffic: random.float(0.75, 1.25), quality }];
    }),
  );
  const guests = new GuestBook(random);
  const visits: Record<string, unknown>[] = [];
  let nextId = FIRST_VISIT_ID;

  for (let offset = days; offset >= 1; offset--) {
    const dayMs = todayMs - offset * DAY;
    const weekday = new Date(dayMs).getUTCDay();
    for (const branch of branches) {
      const trait = traits.get(branch.id) as BranchTraits;
      const expected = clamp(DAILY_VISITS * (WEEKDAY_FACTORS[weekday] ?? 1) * trait.traffic, 0, 3);
      let count = 0;
      for (let slot = 0; slot < 3; slot++) if (random.chance(expected / 3)) count++;
      const starts = Array.from({ length: count }, () => visitStart(random)).sort((a, b) => a - b);
      for (const start of starts) {
        visits.push(buildVisit(random, guests, nextId++, branch, trait, dayMs + start * MINUTE, todayMs));
      }
    }
  }
  return visits;
}

/** Minutes after midnight: lunch (12:00-14:45) or dinner (17:30-21:45), in five-minute steps. */
function visitStart(random: Random): number {
  return random.chance(0.4) ? 12 * 60 + 5 * random.int(0, 33) : 17 * 60 + 30 + 5 * random.int(0, 51);
}

/** Online-feedback guests per client; about one in five feedback visits is a returning guest. */
class GuestBook {
  private readonly byClient = new Map<number, string[]>();
  private readonly issued = new Set<string>();

  constructor(private readonly random: Random) {}

  guestFor(clientId: number): string {
    const known = this.byClient.get(clientId) ?? [];
    this.byClient.set(clientId, known);
    if (known.length > 20 && this.random.chance(0.2)) return this.random.pick(known);
    let id: string;
    do {
      id = `G-${this.random.int(0, 0xffffffff).toString(16).padStart(8, '0').toUpperCase()}`;
    } while (this.issued.has(id));
    this.issued.add(id);
    known.push(id);
    return id;
  }
}

function buildVisit(
  random: Random,
  guests: GuestBook,
  visitId: number,
  branch: BranchProfile,
  trait: BranchTraits,
  startMs: number,
  todayMs: number,
): Record<string, unknown> {
  const roll = random.next();
  const visitType: VisitType = roll < 0.2 ? 'MV' : roll < 0.8 ? 'OF' : 'TA';
  const brand = branch.brand;
  const hour = new Date(startMs).getUTCHours();
  const questionnaireType =
    visitType === 'MV'
      ? `Mystery Visit - ${hour < 16 ? 'Lunch' : 'Dinner'}`
      : visitType === 'OF'
        ? 'Online Feedback'
        : 'Third-party Review';

  // How this visit went, 0..1: the branch's level, the day's luck and the channel's bias.
  let quality = random.normal(trait.quality, 0.08);
  if (visitType === 'OF') quality += 0.02;
  if (visitType === 'TA') quality = random.chance(0.15) ? random.float(0.2, 0.5) : quality - 0.02;
  quality = clamp(quality, 0.1, 0.99);

  const mainDish = random.pick(brand.dishes.Main);
  const scale = visitType === 'MV' ? 100 : 10;
  const sectionCount = visitType === 'MV' ? random.int(6, 8) : visitType === 'OF' ? random.int(4, 7) : random.int(4, 5);
  const optional = SECTIONS.filter((s) => !ALWAYS_ASKED.has(s.name));
  const extra = random.sample(optional, sectionCount - ALWAYS_ASKED.size).map((s) => s.name);
  const chosen = new Set([...ALWAYS_ASKED, ...extra]);
  const sections = SECTIONS.filter((s) => chosen.has(s.name)).map((s) =>
    buildSection(random, s, visitType, scale, quality, brand, mainDish),
  );
  const visitScore = round(sections.reduce((sum, s) => sum + s.score, 0) / sections.length, 1);

  const recommendScore = random.chance(0.1) ? null : Math.round(clamp(random.normal(quality * 10 + 0.6, 1.2), 0, 10));
  const band = recommendScore ?? Math.round(quality * 10);
  const comments = band >= 9 ? PROMOTER_COMMENTS : band >= 7 ? PASSIVE_COMMENTS : DETRACTOR_COMMENTS;
  const recommendComment = random.chance(0.15)
    ? null
    : random.pick(comments).replace('{place}', branch.town).replace('{dish}', mainDish.toLowerCase());

  // Modified a few hours to a day after the visit, and always before today began.
  const latest = todayMs - random.int(1, 45) * MINUTE;
  const modifiedMs = Math.max(
    startMs + 90 * MINUTE,
    Math.min(startMs + random.int(120, 1440) * MINUTE + random.int(0, 59) * 1000, latest),
  );
  const completedWithin = Math.min(180, Math.floor((modifiedMs - startMs) / MINUTE) - 10);
  const completedMs = startMs + random.int(15, completedWithin) * MINUTE + random.int(0, 59) * 1000;

  const visitSource =
    visitType === 'MV'
      ? random.chance(0.95)
        ? 'Mystery Guest'
        : null
      : random.chance(0.1)
        ? null
        : visitType === 'OF'
          ? random.pick(['Web', 'Email invitation', 'Email invitation', 'QR code', 'QR code'] as const)
          : random.pick(['Google', 'Google', 'TripAdvisor'] as const);

  return {
    visitId,
    clientId: branch.clientId,
    clientName: CLIENTS.find((c) => c.id === branch.clientId)?.name ?? null,
    brandId: brand.id,
    brandName: brand.name,
    branchId: branch.id,
    branchCode: branch.branchCode,
    branchName: branch.name,
    visitType,
    questionnaireType,
    visitScore,
    recommendScore,
    recommendComment,
    visitDateTime: formatLocal(startMs),
    modificationDate: formatLocal(modifiedMs),
    visitSource,
    sections,
    guestId: visitType === 'OF' ? guests.guestFor(branch.clientId) : null,
    optIns:
      visitType === 'OF'
        ? {
            contactByEmail: random.chance(0.08) ? null : random.chance(0.6),
            joinMarketing: random.chance(0.1) ? null : random.chance(0.35),
          }
        : null,
    completedAt: `${new Date(londonToUtc(completedMs)).toISOString().slice(0, 19)}Z`,
  };
}

interface DemoQuestion {
  subject: string;
  score: number | null;
  analysisTag: string | null;
  category: string | null;
  dish: string | null;
  answer: string;
}

const MV_RATINGS = [
  [0.9, 'Excellent', 100],
  [0.75, 'Very good', 80],
  [0.6, 'Good', 60],
  [0.4, 'Fair', 40],
  [0, 'Poor', 20],
] as const;

function buildSection(
  random: Random,
  template: SectionTemplate,
  visitType: VisitType,
  scale: number,
  quality: number,
  brand: BrandProfile,
  mainDish: string,
): { name: string; score: number; questions: DemoQuestion[] } {
  // Server names are a mystery guest's question; reviews carry no free text per section.
  const eligible = template.questions.filter(
    (q) => (q.kind !== 'name' || visitType === 'MV') && (q.kind !== 'text' || visitType !== 'TA'),
  );
  const asked = random.sample(eligible, random.int(2, Math.min(6, eligible.length)));
  const sectionQuality = clamp(random.normal(quality, 0.05), 0, 1);
  const context: AnswerContext = { random, section: template, scale, quality: sectionQuality, brand, mainDish };
  const questions = asked.map((q): DemoQuestion => {
    const { score, answer, dish = null } = answerQuestion(q, context);
    // Free-text questions carry no category: they are not analysed as a score.
    const category = score === null ? null : template.category;
    return { subject: q.subject, score, analysisTag: q.tag, category, dish, answer };
  });
  const scored = questions.filter((q) => q.score !== null);
  const score =
    scored.length > 0
      ? round((scored.reduce((sum, q) => sum + (q.score ?? 0), 0) / scored.length / scale) * 100, 1)
      : round(clamp(random.normal(sectionQuality, 0.05), 0, 1) * 100, 1);
  return { name: template.name, score, questions };
}

interface AnswerContext {
  random: Random;
  section: SectionTemplate;
  /** 10 or 100: the questionnaire's score scale. */
  scale: number;
  /** How this section of the visit went, 0..1. */
  quality: number;
  brand: BrandProfile;
  mainDish: string;
}

type Answer = { score: number | null; answer: string; dish?: string | null };

function answerQuestion(q: QuestionTemplate, context: AnswerContext): Answer {
  const { random, section, scale, quality, brand, mainDish } = context;
  switch (q.kind) {
    case 'yesno': {
      const yes = random.chance(clamp(quality + 0.08, 0.05, 0.98));
      return { score: yes ? scale : 0, answer: yes ? 'Yes' : 'No' };
    }
    case 'rating':
    case 'dish': {
      const course = q.kind === 'dish' ? (q.course ?? 'Main') : null;
      const dish = course === null ? null : course === 'Main' ? mainDish : random.pick(brand.dishes[course]);
      const value = clamp(random.normal(quality, 0.1), 0, 1);
      if (scale === 100) {
        const [, label, score] = MV_RATINGS.find(([min]) => value >= min) ?? MV_RATINGS[MV_RATINGS.length - 1];
        return { dish, score, answer: label };
      }
      const score = Math.round(value * 10);
      return { dish, score, answer: String(score) };
    }
    case 'name':
      return { score: null, answer: random.pick(SERVER_NAMES) };
    case 'text': {
      const pool = random.normal(quality, 0.1) >= 0.7 ? section.good : section.bad;
      return { score: null, answer: random.pick(pool).replace('{dish}', mainDish.toLowerCase()) };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Menus
// ---------------------------------------------------------------------------------------------

export interface DemoDish {
  code: string;
  description: string;
  type: string;
  order: number;
  expiryDate: string | null;
  keywords: string[];
  image: { file: string; format: 'jpeg' | 'png' | 'webp'; color: string; width: number; height: number };
}

export interface DemoMenu {
  clientId: number;
  id: number;
  name: string;
  startDate: string;
  endDate: string | null;
  dishes: DemoDish[];
}

type DishType = 'Starter' | 'Main' | 'Dessert' | 'Side' | 'Drink';

/** [code, type, description, keywords, colour, days until expiry]. */
type DishRow = readonly [string, DishType, string, readonly string[], string, number?];

const IMAGE_FORMATS = ['jpeg', 'png', 'webp'] as const;
const EXTENSIONS = { jpeg: 'jpg', png: 'png', webp: 'webp' } as const;

function dishes(today: string, rows: readonly DishRow[]): DemoDish[] {
  return rows.map(([code, type, description, keywords, color, expiresIn], i) => {
    const format = IMAGE_FORMATS[i % IMAGE_FORMATS.length] ?? 'jpeg';
    const large = i % 2 === 0;
    return {
      code,
      description,
      type,
      order: i + 1,
      expiryDate: expiresIn === undefined ? null : addDays(today, expiresIn),
      keywords: [...keywords],
      image: {
        file: `${code}.${EXTENSIONS[format]}`,
        format,
        color,
        width: large ? 400 : 320,
        height: large ? 300 : 240,
      },
    };
  });
}

/** The demo menus, dated around `today` (yyyy-mm-dd). Image files are named, not written. */
export function demoMenus(today: string): DemoMenu[] {
  parseDate(today);
  return [
    {
      clientId: 1001,
      id: 101,
      name: 'Acme Grill Autumn Menu',
      startDate: addDays(today, -45),
      endDate: null,
      dishes: dishes(today, [
        [
          'AG-STR-01',
          'Starter',
          'Crispy calamari, lightly dusted with salt and pepper, with garlic aioli and lemon.',
          [],
          '#C8A165',
        ],
        [
          'AG-STR-02',
          'Starter',
          'Garlic mushrooms, pan-fried in garlic and herb butter on toasted sourdough.',
          ['vegetarian'],
          '#8D6E63',
        ],
        [
          'AG-STK-01',
          'Main',
          '8oz sirloin steak, chargrilled to order, with triple-cooked chips, watercress and peppercorn sauce.',
          ['signature', 'gluten-free'],
          '#7B3F2A',
        ],
        [
          'AG-STK-02',
          'Main',
          '10oz ribeye steak, aged for 28 days, with roasted vine tomatoes, flat mushroom and chips.',
          ['gluten-free'],
          '#6D2E1F',
        ],
        [
          'AG-BRG-01',
          'Main',
          'Classic cheeseburger, two smashed beef patties, American cheese, pickles and burger sauce in a brioche bun.',
          [],
          '#B5651D',
        ],
        [
          'AG-CHK-01',
          'Main',
          'BBQ half chicken, slow-cooked then flame-grilled, with slaw and sweet potato fries.',
          ['gluten-free'],
          '#A0522D',
        ],
        ['AG-SID-01', 'Side', 'Triple-cooked chips, finished with sea salt.', ['vegan', 'gluten-free'], '#E0B04C'],
        [
          'AG-DES-01',
          'Dessert',
          'Sticky toffee pudding, warm date sponge with toffee sauce and vanilla ice cream.',
          ['vegetarian'],
          '#5D3A1A',
        ],
        [
          'AG-DRK-01',
          'Drink',
          'Autumn spiced apple spritz, pressed apple, cinnamon syrup and soda. Available until the end of the season.',
          ['alcohol-free', 'vegan', 'seasonal'],
          '#D4A017',
          30,
        ],
      ]),
    },
    {
      clientId: 1001,
      id: 102,
      name: 'Acme Pizzeria Lunch',
      startDate: addDays(today, -20),
      endDate: addDays(today, 60),
      dishes: dishes(today, [
        [
          'AP-STR-01',
          'Starter',
          'Garlic bread, wood-fired dough with garlic butter and parsley.',
          ['vegetarian'],
          '#E8C07D',
        ],
        [
          'AP-STR-02',
          'Starter',
          'Arancini, crispy risotto balls filled with mozzarella, with an arrabbiata dip.',
          ['vegetarian'],
          '#D2913C',
        ],
        [
          'AP-PIZ-01',
          'Main',
          'Margherita pizza, San Marzano tomato, fior di latte mozzarella and fresh basil.',
          ['vegetarian'],
          '#C0392B',
        ],
        ['AP-PIZ-02', 'Main', 'Pepperoni pizza, spicy pepperoni, mozzarella and oregano.', ['spicy'], '#A93226'],
        [
          'AP-PIZ-03',
          'Main',
          'Quattro formaggi pizza, mozzarella, gorgonzola, fontina and parmesan.',
          ['vegetarian'],
          '#F4D03F',
        ],
        ['AP-PAS-01', 'Main', 'Spaghetti carbonara, guanciale, egg yolk, pecorino and black pepper.', [], '#F5DEB3'],
        [
          'AP-DES-01',
          'Dessert',
          'Tiramisu, mascarpone cream, espresso-soaked savoiardi and cocoa.',
          ['vegetarian', 'contains alcohol'],
          '#6F4E37',
        ],
        [
          'AP-DRK-01',
          'Drink',
          'Lunch deal soft drink, a choice of San Pellegrino flavours with any pizza before 3pm.',
          ['alcohol-free', 'lunch deal'],
          '#F39C12',
          14,
        ],
      ]),
    },
    {
      clientId: 1002,
      id: 201,
      name: 'Crown & Anchor Classics',
      startDate: addDays(today, -365),
      endDate: null,
      dishes: dishes(today, [
        [
          'CA-STR-01',
          'Starter',
          'Scotch egg, a soft-boiled free-range egg wrapped in sausage meat, with piccalilli.',
          [],
          '#9C6B30',
        ],
        ['CA-STR-02', 'Starter', 'Soup of the day, served with crusty bread and butter.', ['vegetarian'], '#D35400'],
        [
          'CA-PIE-01',
          'Main',
          'Steak and ale pie, beef slow-braised in ale under a shortcrust lid, with mash, greens and gravy.',
          ['pub classic'],
          '#8B5A2B',
        ],
        [
          'CA-FSH-01',
          'Main',
          'Fish and chips, beer-battered haddock, chunky chips, mushy peas and tartare sauce.',
          ['pub classic', 'dairy-free'],
          '#DAA520',
        ],
        [
          'CA-SAU-01',
          'Main',
          'Bangers and mash, Cumberland sausages, buttery mash and caramelised onion gravy.',
          [],
          '#7F4F24',
        ],
        [
          'CA-ROA-01',
          'Main',
          'Sunday roast beef, Yorkshire pudding, roast potatoes, seasonal vegetables and gravy (Sundays only).',
          ['sunday only'],
          '#8E4B32',
        ],
        ['CA-SID-01', 'Side', 'Onion rings, beer-battered, with smoked paprika mayonnaise.', ['vegetarian'], '#C9A227'],
        [
          'CA-DES-01',
          'Dessert',
          'Apple crumble, Bramley apples under an oat crumble, with custard.',
          ['vegetarian'],
          '#B8860B',
        ],
        [
          'CA-DRK-01',
          'Drink',
          'Anchor Best Bitter, a cask ale brewed for the house, 4.1% ABV, by the pint.',
          ['cask ale'],
          '#8B4513',
        ],
      ]),
    },
  ];
}

/**
 * Reviews of recent mystery visits: the survey platform re-sends an MV visit with corrected
 * scores within 24 hours of its completion. The last `perClient` MV visits of each client come
 * back with their overall score moved by a few points, so the change feed has re-scored
 * visits to show after the first import.
 */
export function demoReviews(visits: Record<string, unknown>[], perClient = 3): Record<string, unknown>[] {
  const clients = [...new Set(visits.map((v) => v.clientId))];
  const recent = clients.flatMap((client) => visits.filter((v) => v.clientId === client && v.visitType === 'MV').slice(-perClient));
  return recent.map((visit, i) => {
    const score = Number(visit.visitScore);
    const moved = round(Math.min(100, Math.max(0, score + (i % 2 === 0 ? 2.5 : -3))), 1);
    return { ...visit, visitScore: moved };
  });
}
