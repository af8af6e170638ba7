#!/usr/bin/env node
// sign.mjs: signs one JWT ticket with the npm jose library's SignJWT, the way an organizer's
// shop would, so the Rust tests check that gatemesh takes what jose makes (here: the `prod`
// claim naming a ticket's product).
//
// Usage: node tools/jose/sign.mjs < request.json   (needs `npm ci` in tools/jose)
//
// stdin: {"pkcs8_pem": "...", "claims": {...}}; the header is {alg: "ES256"}, no kid.
// stdout: {"token": "..."}, exit 0; {"error": "..."}, exit 2 on a bad request.

import { SignJWT, importPKCS8 } from 'jose';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

try {
  const req = JSON.parse(await readStdin());
  const key = await importPKCS8(req.pkcs8_pem, 'ES256');
  const token = await new SignJWT(req.claims).setProtectedHeader({ alg: 'ES256' }).sign(key);
  process.stdout.write(`${JSON.stringify({ token })}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ error: String(e?.message ?? e) })}\n`);
  process.exit(2);
}
