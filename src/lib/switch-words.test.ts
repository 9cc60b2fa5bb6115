import assert from 'node:assert/strict';
import { test } from 'node:test';
import { switchWord } from './switch-words.ts';

test('switch words: on and off words in any case, blanks ignored; anything else is neither', () => {
  for (const w of ['1', 'true', 'YES', ' on ']) assert.equal(switchWord(w), 'on', w);
  for (const w of ['0', 'False', 'no', 'OFF\n']) assert.equal(switchWord(w), 'off', w);
  for (const w of ['', 'enabled', '/tmp/off', '2']) assert.equal(switchWord(w), null, w);
});
