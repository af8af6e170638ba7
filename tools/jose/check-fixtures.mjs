#!/usr/bin/env node
// check-fixtures.mjs: checks that jose agrees with every case in
// crates/gatemesh-ticket/tests/fixtures/jose/cases.json.
//
// Usage: cd tools/jose && npm ci && node check-fixtures.mjs
//
// For each case it runs verify.mjs (the same CLI the Rust tests call) with
// issuer.pub.pem, the file's event and at, and checks:
//   - expect "valid"  <=> verify.mjs says valid (exit 0), and then that the
//     payload's tid/seat are the case's tid/seat;
//   - every other expect: verify.mjs says invalid (exit 1).
// Then control checks, so that each bad case fails for its one stated reason:
//   expired         valid at 2028-06-01;  not_yet_valid  valid at 2032-01-01;
//   wrong_event     valid for its own eid;
//   forged_other_key, unknown_kid  valid with other.pub.pem;
//   hs256_key_confusion  HS256-valid with the bytes of issuer.pub.pem as secret;
//   alg_none        readable by jose's UnsecuredJWT.decode.
// (These last two call jose directly, since verify.mjs only speaks ES256.)
// Prints one line per check and a closing "N passed, N failed"; exits 1 on
// any disagreement.

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UnsecuredJWT, jwtVerify } from 'jose';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = join(here, '..', '..', 'crates', 'gatemesh-ticket', 'tests', 'fixtures', 'jose');
const read = (f) => readFileSync(join(fixtures, f), 'utf8');
const issuerPem = read('issuer.pub.pem');
const otherPem = read('other.pub.pem');
const { event, at, cases } = JSON.parse(read('cases.json'));

const payloadOf = (token) =>
  JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));

function verify(req) {
  const r = spawnSync(process.execPath, [join(here, 'verify.mjs')], {
    input: JSON.stringify(req),
    encoding: 'utf8',
    timeout: 20_000,
  });
  let res = null;
  try {
    res = JSON.parse(r.stdout);
  } catch {
    // fall through: reported as a failure below
  }
  return { status: r.status, res, raw: `${r.stdout}${r.stderr}`.trim() };
}

let passed = 0;
let failed = 0;
function report(ok, label, detail) {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${label.padEnd(48)} ${detail}`);
}

const controls = {
  expired: { at: '2028-06-01T12:00:00Z' },
  not_yet_valid: { at: '2032-01-01T00:00:00Z' },
  wrong_event: { ownEvent: true }, // the eid the token itself carries
  bad_signature: { spki_pem: otherPem, only: ['forged_other_key'] },
  unknown_key: { spki_pem: otherPem },
};

for (const c of cases) {
  const { status, res, raw } = verify({ spki_pem: issuerPem, token: c.token, event, at });
  const label = `${c.name} (expect ${c.expect})`;
  if (!res || typeof res.valid !== 'boolean') {
    report(false, label, `bad output, exit ${status}: ${raw}`);
    continue;
  }
  if (c.expect === 'valid') {
    const seat = res.payload?.seat ?? null;
    const ok = status === 0 && res.valid && res.payload.tid === c.tid && seat === c.seat;
    report(ok, label, ok ? `valid tid=${c.tid} seat=${c.seat}` : `exit ${status}: ${raw}`);
  } else {
    const ok = status === 1 && !res.valid;
    report(ok, label, ok ? `invalid: ${res.error}` : `exit ${status}: ${raw}`);
  }

  const ctl = controls[c.expect];
  if (ctl && (!ctl.only || ctl.only.includes(c.name))) {
    const req = { spki_pem: issuerPem, token: c.token, event, at };
    if (ctl.spki_pem) req.spki_pem = ctl.spki_pem;
    if (ctl.at) req.at = ctl.at;
    if (ctl.ownEvent) req.event = payloadOf(c.token).eid;
    const r = verify(req);
    const what = ctl.spki_pem ? 'other.pub.pem' : ctl.at ? `at ${ctl.at}` : `event ${req.event}`;
    const ok = r.status === 0 && r.res?.valid === true && r.res.payload.tid === c.tid;
    report(ok, `  control: ${c.name} with ${what}`, ok ? 'valid' : `exit ${r.status}: ${r.raw}`);
  }
}

async function directControl(name, label, fn) {
  const c = cases.find((x) => x.name === name);
  if (!c) return report(false, `  control: ${name}`, 'case missing from cases.json');
  try {
    const { payload } = await fn(c.token);
    const ok = payload.tid === c.tid;
    report(ok, `  control: ${name} ${label}`, ok ? 'valid' : `tid ${payload.tid}`);
  } catch (e) {
    report(false, `  control: ${name} ${label}`, `${e.code ?? e.name}: ${e.message}`);
  }
}
await directControl('hs256_key_confusion', 'as HS256 with PEM bytes', (t) =>
  jwtVerify(t, new TextEncoder().encode(issuerPem), { algorithms: ['HS256'], currentDate: new Date(at) }),
);
await directControl('alg_none', 'by UnsecuredJWT.decode', async (t) =>
  UnsecuredJWT.decode(t, { currentDate: new Date(at) }),
);

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 && passed > 0 ? 0 : 1;
