/**
 * The demo data set: two hospitality groups with their brands and branches, a few months of
 * guest-experience visits and some menus. The catalogue is data (the JSON files beside this
 * one, read by demo-catalogue.ts); the visits are made up by a seeded generator
 * (demo-visits.ts). Pure and deterministic: the same arguments (and seed) always give the
 * same data. The benchmark (bench/visits.mjs) imports `createRandom` and `demoVisits` from
 * the built file.
 */
export { createRandom, type Random } from './random.js';
export { demoClients, demoMenus, type DemoClient, type DemoDish, type DemoMenu } from './demo-catalogue.js';
export { DemoReviews, demoReviews, demoVisits, eachDemoVisit } from './demo-visits.js';
