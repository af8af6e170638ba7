#!/usr/bin/env node
// make-fixtures.mjs: makes the jose interop fixtures for gatemesh JWT tickets.
//
// WHY: gatemesh must accept JWT tickets made by the npm `jose` library
// (SignJWT, protected header {alg: "ES256"}, claims tid/eid/seat?/iat/exp/nbf?)
// and must reject the usual attacks on JWT verifiers. These fixtures were made
// by jose itself, so the Rust tests check us against an independent
// implementation, not against our own signer.
//
// HOW (run once by hand; the output is committed, so do not run it in CI):
//   cd tools/jose && npm ci && node make-fixtures.mjs
// It writes into crates/gatemesh-ticket/tests/fixtures/jose/:
//   issuer.pub.pem  SPKI PEM of a fresh ES256 key (the issuer the tests trust)
//   other.pub.pem   SPKI PEM of a second fresh ES256 key (a different issuer)
//   cases.json      the tokens and what a verifier must say about each
//   README.md       what these files are and how they were made
// Each run makes new keys and new signatures (ECDSA is randomized), so running
// it again rewrites every file. Private keys live only in memory and are not
// written anywhere. Afterwards run `node check-fixtures.mjs` to check that
// jose agrees with every case.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, base64url, decodeJwt, exportSPKI, generateKeyPair } from 'jose';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const outDir = join(repoRoot, 'crates', 'gatemesh-ticket', 'tests', 'fixtures', 'jose');

const EVENT = 'JOSE-TEST-2026';
const AT = '2030-06-01T12:00:00Z'; // the fixed verification time of the tests
const sec = (iso) => Math.floor(Date.parse(iso) / 1000);
const IAT = sec('2026-01-01T00:00:00Z');
const EXP_FAR = sec('2099-01-01T00:00:00Z');
const EXP_PAST = sec('2029-01-01T00:00:00Z'); // before AT
const NBF_PAST = sec('2027-01-01T00:00:00Z'); // before AT
const NBF_FUTURE = sec('2031-01-01T00:00:00Z'); // after AT
const UNKNOWN_KID = 'kid-that-no-key-has';

const joseVersion = JSON.parse(
  await readFile(join(here, 'node_modules', 'jose', 'package.json'), 'utf8'),
).version;

const issuer = await generateKeyPair('ES256', { extractable: true });
const other = await generateKeyPair('ES256', { extractable: true });
const issuerPem = `${await exportSPKI(issuer.publicKey)}\n`;
const otherPem = `${await exportSPKI(other.publicKey)}\n`;

/** Claims in the order gatemesh writes them; seat is left out when null. */
function claims({ tid, eid = EVENT, seat = null, iat = IAT, exp = EXP_FAR, nbf, extra }) {
  const c = { tid, eid };
  if (seat !== null) c.seat = seat;
  c.iat = iat;
  if (nbf !== undefined) c.nbf = nbf;
  c.exp = exp;
  return { ...c, ...extra };
}

const sign = (payload, key, header = { alg: 'ES256' }) =>
  new SignJWT(payload).setProtectedHeader(header).sign(key);

const b64json = (obj) => base64url.encode(JSON.stringify(obj));

const cases = [];
const add = (name, token, expect, note) => {
  const p = decodeJwt(token.split('.').length === 3 ? token : `${token}.`);
  cases.push({ name, token, expect, tid: p.tid, seat: p.seat ?? null, note });
};
const addRaw = (name, token, expect, tid, seat, note) =>
  cases.push({ name, token, expect, tid, seat, note });

// --- valid --------------------------------------------------------------
const validSeat = await sign(claims({ tid: 'T-JOSE-0001', seat: 'A-12' }), issuer.privateKey);
add('valid_with_seat', validSeat, 'valid', 'Plain jose SignJWT, header {alg:ES256}, with seat.');

add(
  'valid_without_seat',
  await sign(claims({ tid: 'T-JOSE-0002' }), issuer.privateKey),
  'valid',
  'No seat claim at all (absent, not null).',
);
add(
  'valid_nbf_in_past',
  await sign(claims({ tid: 'T-JOSE-0003', seat: 'B-07', nbf: NBF_PAST }), issuer.privateKey),
  'valid',
  'nbf = 2027-01-01, before at.',
);
add(
  'valid_extra_claim',
  await sign(
    claims({ tid: 'T-JOSE-0004', seat: 'C-01', extra: { gate: 'north', vip: true } }),
    issuer.privateKey,
  ),
  'valid',
  'Unknown extra claims "gate" and "vip" must be ignored.',
);
add(
  'valid_typ_jwt',
  await sign(claims({ tid: 'T-JOSE-0005', seat: 'D-22' }), issuer.privateKey, {
    alg: 'ES256',
    typ: 'JWT',
  }),
  'valid',
  'Header {alg:ES256, typ:JWT}.',
);

// --- time and event -----------------------------------------------------
add(
  'expired',
  await sign(claims({ tid: 'T-JOSE-0006', seat: 'E-03', exp: EXP_PAST }), issuer.privateKey),
  'expired',
  'exp = 2029-01-01, before at; otherwise valid.',
);
add(
  'not_yet_valid',
  await sign(claims({ tid: 'T-JOSE-0007', seat: 'F-09', nbf: NBF_FUTURE }), issuer.privateKey),
  'not_yet_valid',
  'nbf = 2031-01-01, after at; otherwise valid.',
);
add(
  'wrong_event',
  await sign(claims({ tid: 'T-JOSE-0008', seat: 'G-15', eid: 'OTHER-EVENT' }), issuer.privateKey),
  'wrong_event',
  'eid = OTHER-EVENT; validly signed by the issuer.',
);

// --- signature attacks --------------------------------------------------
add(
  'forged_other_key',
  await sign(claims({ tid: 'T-JOSE-0009', seat: 'H-01' }), other.privateKey),
  'bad_signature',
  'Good claims signed by the other key (other.pub.pem); the verifier trusts only issuer.pub.pem.',
);

{
  const [h, p, s] = validSeat.split('.');
  const payload = JSON.parse(new TextDecoder().decode(base64url.decode(p)));
  payload.seat = 'VIP-01';
  const tampered = `${h}.${b64json(payload)}.${s}`;
  add(
    'tampered_payload',
    tampered,
    'bad_signature',
    'valid_with_seat with the payload re-encoded with seat VIP-01, original header and signature kept.',
  );
}

addRaw(
  'alg_none',
  `${b64json({ alg: 'none' })}.${b64json(claims({ tid: 'T-JOSE-0010', seat: 'A-01' }))}.`,
  'bad_signature',
  'T-JOSE-0010',
  'A-01',
  'Unsigned token, header {alg:none}, empty signature segment; built by hand. Must be refused.',
);

add(
  'hs256_key_confusion',
  await sign(claims({ tid: 'T-JOSE-0011', seat: 'A-02' }), new TextEncoder().encode(issuerPem), {
    alg: 'HS256',
  }),
  'bad_signature',
  'HS256 with the exact bytes of issuer.pub.pem (trailing newline included) as HMAC secret: key confusion. Must be refused.',
);

add(
  'unknown_kid',
  await sign(claims({ tid: 'T-JOSE-0012', seat: 'A-03' }), other.privateKey, {
    alg: 'ES256',
    kid: UNKNOWN_KID,
  }),
  'unknown_key',
  `Header kid "${UNKNOWN_KID}", which no key has; signed by the other key, so it fails whether or not a verifier looks at kid.`,
);

// --- unreadable ---------------------------------------------------------
{
  const t = await sign(claims({ tid: 'T-JOSE-0013', seat: 'A-04' }), issuer.privateKey);
  add(
    'truncated_no_signature',
    t.split('.').slice(0, 2).join('.'),
    'unreadable',
    'A valid token with its signature segment and the dot before it cut off (two segments).',
  );
}
addRaw(
  'garbage_base64',
  '!!not*base64$$.%%also~not%%.@@@@',
  'unreadable',
  null,
  null,
  'Three segments none of which is base64url.',
);

// --- write --------------------------------------------------------------
await mkdir(outDir, { recursive: true });
await writeFile(join(outDir, 'issuer.pub.pem'), issuerPem);
await writeFile(join(outDir, 'other.pub.pem'), otherPem);
await writeFile(
  join(outDir, 'cases.json'),
  `${JSON.stringify({ event: EVENT, at: AT, cases }, null, 2)}\n`,
);

const rows = cases.map((c) => `| \`${c.name}\` | \`${c.expect}\` | ${c.note} |`).join('\n');
const readme = `# jose interop fixtures

Made by the npm \`jose\` library, version **${joseVersion}** (pinned in
\`tools/jose/package.json\`), on Node ${process.version}, with:

\`\`\`sh
cd tools/jose && npm ci && node make-fixtures.mjs   # writes this folder
node check-fixtures.mjs                             # jose agrees with every case
\`\`\`

Do not edit these files by hand. Running \`make-fixtures.mjs\` again makes new
keys and new signatures and rewrites all of them.

| file | what it is |
| --- | --- |
| \`issuer.pub.pem\` | SPKI PEM of a fresh P-256 key made by \`generateKeyPair('ES256', {extractable: true})\`. The one key the tests trust. |
| \`other.pub.pem\` | SPKI PEM of a second such key: a different issuer, trusted by nobody. Used to sign \`forged_other_key\` and \`unknown_kid\`. |
| \`cases.json\` | \`{"event", "at", "cases": [...]}\`: verify every token with \`issuer.pub.pem\` only, for event \`event\`, at time \`at\`. |

No private key was written anywhere; nobody needs them afterwards.

Each case is \`{"name", "token", "expect", "tid", "seat", "note"}\`. \`expect\` is
one of \`valid\`, \`bad_signature\`, \`expired\`, \`not_yet_valid\`,
\`wrong_event\`, \`unreadable\`, \`unknown_key\`. \`tid\` and \`seat\` are what
the payload says (\`seat\` is \`null\` when the claim is absent; both are
\`null\` when the payload cannot be read); for valid cases they are what the
verifier must decode. Valid tokens have \`iat\` 2026-01-01 and \`exp\` 2099-01-01.

| case | expect | note |
| --- | --- | --- |
${rows}
`;
await writeFile(join(outDir, 'README.md'), readme);

console.log(
  `jose ${joseVersion}: wrote ${cases.length} cases and 2 public keys to ${relative(repoRoot, outDir)}/`,
);
