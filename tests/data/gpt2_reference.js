// GPT-2 token ids from an implementation nobody on zero wrote, for gpt2_reference_test and the
// tokenizer speed figure (bench/README.md).
//   node gpt2_reference.js NPM_DIR gpt-3-encoder|js-tiktoken INPUT...
// reads each INPUT as UTF-8 (it must be valid UTF-8: a JS string cannot hold other bytes), writes
// its ids to INPUT.<reference>.ids one a line, and prints "tokens N seconds S" for all the inputs
// (the encoding alone: loading the package and file I/O are not timed).
//
// gpt-3-encoder's encode() builds its result with Array.concat per word, quadratic in the text's
// length, so it is given the text a line at a time, cut where a cut cannot change GPT-2's words:
// before a "\n" that follows a visible ASCII character. The word holding that character ends
// there in the whole text too (no letter, digit or symbol run takes a "\n", and a whitespace run
// starts after it), and the regex has no look-behind, so the words after the cut are the same.
// js-tiktoken encodes the whole text at once.
'use strict';
const fs = require('fs');
const path = require('path');

const [npmDir, which, ...inputs] = process.argv.slice(2);

function visible(c) { return c >= 0x21 && c <= 0x7e; }

function safeChunks(s) {
  const chunks = [];
  let start = 0;
  for (let i = 1; i < s.length; i++) {
    if (s.charCodeAt(i) === 10 && visible(s.charCodeAt(i - 1))) {
      chunks.push(s.slice(start, i));
      start = i;
    }
  }
  chunks.push(s.slice(start));
  return chunks;
}

let encode;
if (which === 'gpt-3-encoder') {
  const enc = require(path.join(npmDir, 'node_modules', 'gpt-3-encoder'));
  encode = (s) => {
    const ids = [];
    for (const chunk of safeChunks(s)) for (const id of enc.encode(chunk)) ids.push(id);
    return ids;
  };
} else if (which === 'js-tiktoken') {
  const { getEncoding } = require(path.join(npmDir, 'node_modules', 'js-tiktoken'));
  const enc = getEncoding('gpt2');
  encode = (s) => enc.encode(s, [], []);  // no special tokens: "<|endoftext|>" in the text is text
} else {
  console.error(`unknown reference '${which}': use gpt-3-encoder or js-tiktoken`);
  process.exit(2);
}

let tokens = 0;
let nanoseconds = 0n;
for (const input of inputs) {
  const text = fs.readFileSync(input, 'utf8');
  const start = process.hrtime.bigint();
  const ids = encode(text);
  nanoseconds += process.hrtime.bigint() - start;
  tokens += ids.length;
  fs.writeFileSync(`${input}.${which}.ids`, ids.join('\n') + (ids.length ? '\n' : ''));
}
console.log(`tokens ${tokens} seconds ${(Number(nanoseconds) / 1e9).toFixed(3)}`);
