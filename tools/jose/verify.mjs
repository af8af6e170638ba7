#!/usr/bin/env node
// verify.mjs: verifies one gatemesh JWT ticket with the npm jose library.
// The Rust tests call it to check that our JWTs verify in jose.
//
// Usage: node tools/jose/verify.mjs < request.json   (needs `npm ci` in tools/jose)
//
// stdin: one JSON object, read to EOF:
//   {"spki_pem": "...", "token": "...", "event": "..."?, "at": "RFC3339"?}
//   spki_pem may have text lines (e.g. "kid: abc123") before the
//   "-----BEGIN PUBLIC KEY-----" line; they are dropped.
// stdout: one line of JSON, then exit code:
//   {"valid": true, "payload": {...}, "header": {...}}   exit 0
//   {"valid": false, "error": "<code>", "message": "..."}   exit 1, where
//     <code> is jose's error code (e.g. ERR_JWT_EXPIRED, ERR_JWS_INVALID,
//     ERR_JOSE_ALG_NOT_ALLOWED, ERR_JWS_SIGNATURE_VERIFICATION_FAILED), or
//     ERR_WRONG_EVENT when `event` is given and the token's eid differs
//   {"valid": false, "error": "ERR_BAD_REQUEST", "message": "..."}   exit 2,
//     when stdin is not such a request (bad JSON, missing fields, bad `at`,
//     no PEM block, a key jose cannot import as ES256);
//   {"valid": false, "error": "ERR_INTERNAL", "message": "..."}   exit 3, a bug here.
// It reads stdin only until EOF, so an empty or closed stdin ends it at once.

import { importSPKI, jwtVerify } from 'jose';

const BEGIN = '-----BEGIN PUBLIC KEY-----';
const END = '-----END PUBLIC KEY-----';

class BadRequest extends Error {}

function out(obj, code) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
  process.exitCode = code;
}

const fail = (error, message, code) => out({ valid: false, error, message }, code);

/** Keeps only the PEM block, dropping any text lines around it. */
function pemBlock(text) {
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END, start);
  if (start < 0 || end < 0) throw new BadRequest(`spki_pem has no ${BEGIN} ... ${END} block`);
  return text.slice(start, end + END.length);
}

function parseRequest(raw) {
  let req;
  try {
    req = JSON.parse(raw);
  } catch (e) {
    throw new BadRequest(`stdin is not JSON: ${e.message}`);
  }
  if (req === null || typeof req !== 'object' || Array.isArray(req))
    throw new BadRequest('stdin is not a JSON object');
  for (const f of ['spki_pem', 'token'])
    if (typeof req[f] !== 'string') throw new BadRequest(`"${f}" must be a string`);
  for (const f of ['event', 'at'])
    if (req[f] != null && typeof req[f] !== 'string')
      throw new BadRequest(`"${f}" must be a string when given`);
  let currentDate;
  if (req.at != null) {
    currentDate = new Date(req.at);
    if (Number.isNaN(currentDate.getTime())) throw new BadRequest(`"at" is not a date: ${req.at}`);
  }
  return { pem: pemBlock(req.spki_pem), token: req.token, event: req.event ?? undefined, currentDate };
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function main() {
  let req;
  try {
    req = parseRequest(await readStdin());
  } catch (e) {
    if (!(e instanceof BadRequest)) throw e;
    return fail('ERR_BAD_REQUEST', e.message, 2);
  }

  let key;
  try {
    key = await importSPKI(req.pem, 'ES256');
  } catch (e) {
    return fail('ERR_BAD_REQUEST', `spki_pem: ${e.code ?? e.name}: ${e.message}`, 2);
  }

  try {
    const { payload, protectedHeader } = await jwtVerify(req.token, key, {
      algorithms: ['ES256'],
      currentDate: req.currentDate,
    });
    if (req.event !== undefined && payload.eid !== req.event) {
      const msg = `eid ${JSON.stringify(payload.eid)} is not ${JSON.stringify(req.event)}`;
      return fail('ERR_WRONG_EVENT', msg, 1);
    }
    return out({ valid: true, payload, header: protectedHeader }, 0);
  } catch (e) {
    return fail(e.code ?? e.message, e.message, 1);
  }
}

main().catch((e) => fail('ERR_INTERNAL', String(e?.stack ?? e), 3));
