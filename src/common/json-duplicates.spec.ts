import { duplicateKey, quotedKey } from './json-duplicates.js';

describe('duplicateKey', () => {
  it('finds a key an object names twice, at any depth, however it is escaped', () => {
    expect(duplicateKey('{"menuId": 1, "menuId": 2}')).toBe('menuId');
    expect(duplicateKey('{"a": {"b": 1, "c": [1, {"d": 1, "d": 2}]}}')).toBe('d');
    expect(duplicateKey('{"a": 1, "\\u0061": 2}')).toBe('a');
    expect(duplicateKey('[{"x": 1}, {"y": 1, "y": 1}]')).toBe('y');
    expect(duplicateKey('{"k\\"q": 1, "k\\"q": 2}')).toBe('k"q');
  });

  it('quotes a long key by its first 100 characters', () => {
    const key = 'k'.repeat(5000);
    expect(duplicateKey(`{"${key}": 1, "${key}": 2}`)).toBe(key);
    expect(quotedKey(key)).toBe(`${'k'.repeat(100)}…`);
    expect(quotedKey('menuId')).toBe('menuId');
  });

  it('quotes a key of characters beyond the BMP by characters, never cutting one in half', () => {
    expect(quotedKey('🍕'.repeat(100))).toBe('🍕'.repeat(100));
    expect(quotedKey(`k${'🍕'.repeat(100)}`)).toBe(`k${'🍕'.repeat(99)}…`);
    expect(JSON.stringify(quotedKey(`k${'🍕'.repeat(100)}`))).not.toMatch(/\\ud83c/);
  });

  it('finds none where keys differ, repeat in other objects or appear as values', () => {
    expect(duplicateKey('{"a": 1, "b": {"a": 2}, "c": [{"a": 3}, {"a": 4}]}')).toBeNull();
    expect(duplicateKey('{"a": "a", "b": ["a", "a"], "c": "x\\\\"}')).toBeNull();
    expect(duplicateKey('{"a": "{\\"a\\": 1, \\"a\\": 2}"}')).toBeNull();
    expect(duplicateKey('{"a\\\\": 1, "a": 2}')).toBeNull();
    expect(duplicateKey('{}')).toBeNull();
    expect(duplicateKey('[1, "two", null, {"x": [], "y": {}}]')).toBeNull();
    expect(duplicateKey('"just a string"')).toBeNull();
    expect(duplicateKey('42')).toBeNull();
  });
});
