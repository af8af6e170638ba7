//! Fuzzing an HTTP API with request bodies: JSON shaped like the real bodies (the keys they
//! use, values of every type, and some values that mean something to the endpoint), and
//! plain noise, posted by [`post_bodies`], which holds every answer to the rule for bad
//! input.

use proptest::{prelude::*, test_runner::TestRunner};
use serde_json::{Value, json};

#[cfg(test)]
mod tests;

/// Bytes to post: three times in four a JSON document of `keys` (nested up to three deep)
/// whose leaves are null, booleans, integers, floats, short strings or one of `meaningful`;
/// otherwise up to 300 arbitrary bytes.
pub fn bodies(keys: Vec<&'static str>, meaningful: Vec<Value>) -> BoxedStrategy<Vec<u8>> {
    let keys = prop::sample::select(keys);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,60}".prop_map(Value::from),
        prop::sample::select(meaningful),
    ];
    let value = leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(keys.clone(), inner, 0..6).prop_map(|m| json!(m)),
        ]
    });
    prop_oneof![
        3 => value.prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..300),
    ]
    .boxed()
}

/// Bytes of a real file `real`, damaged: a byte flipped, cut short, a run of noise spliced
/// in, or the real file whole — what reaches a parser past a format's first check.
pub fn damaged(real: Vec<u8>) -> BoxedStrategy<Vec<u8>> {
    let len = real.len().max(1);
    let flip = (0..len, any::<u8>()).prop_map({
        let real = real.clone();
        move |(at, b)| {
            let mut v = real.clone();
            if let Some(x) = v.get_mut(at) {
                *x ^= b | 1;
            }
            v
        }
    });
    let cut = (0..len).prop_map({
        let real = real.clone();
        move |at| real[..at.min(real.len())].to_vec()
    });
    let splice = (0..len, prop::collection::vec(any::<u8>(), 1..64)).prop_map({
        let real = real.clone();
        move |(at, noise)| {
            let at = at.min(real.len());
            let mut v = real[..at].to_vec();
            v.extend(noise);
            v.extend_from_slice(&real[at..]);
            v
        }
    });
    prop_oneof![4 => flip, 2 => cut, 2 => splice, 1 => Just(real)].boxed()
}

/// A runtime for a fuzz test, which is synchronous (proptest's runner is): it starts the
/// API under test, reads what is stored, and carries [`post_bodies`]'s requests.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// An HTTP API to fuzz: where it listens, the bearer token it wants (if any), and the paths
/// that take a body, each with the content type its bodies carry (`application/json`, or
/// `application/octet-stream` for a ledger file): a body must get past the content-type
/// check to reach the parser under test.
#[derive(Debug)]
pub struct Api<'a> {
    pub client: &'a reqwest::Client,
    /// `http://host:port`.
    pub base: &'a str,
    pub token: Option<&'a str>,
    pub paths: Vec<(String, &'static str)>,
}

/// `paths`, each taking JSON.
pub fn json_paths(paths: impl IntoIterator<Item = String>) -> Vec<(String, &'static str)> {
    paths.into_iter().map(|p| (p, "application/json")).collect()
}

/// Posts 256 bodies from `bodies` (see [`bodies`]), each to one of the API's paths, with
/// that path's content type, and fails the test unless every answer follows the rule for bad
/// input: never a 5xx, every 4xx a JSON error with a message, and a 4xx leaves `stored`
/// (what the API shows of its data) as it was. A body that happens to be a valid request
/// may change what is stored; the next one is held to what it left.
pub fn post_bodies<S: PartialEq>(
    runtime: &tokio::runtime::Runtime,
    api: Api<'_>,
    bodies: BoxedStrategy<Vec<u8>>,
    stored: impl Fn() -> S,
) {
    let post = |(path, content_type): &(String, &str), body: Vec<u8>| {
        runtime.block_on(async {
            let mut r = api
                .client
                .post(format!("{}{path}", api.base))
                .header("content-type", *content_type)
                .body(body);
            if let Some(token) = api.token {
                r = r.bearer_auth(token);
            }
            let r = r.send().await.expect("the API answers");
            let status = r.status();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        })
    };
    let last = std::cell::RefCell::new(stored());
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let cases = (prop::sample::select(api.paths.clone()), bodies);
    let outcome = runner.run(&cases, |(path, body)| {
        let (status, answer) = post(&path, body);
        let path = &path.0;
        prop_assert!(status.as_u16() < 500, "{path} {status}: {answer}");
        let now = stored();
        if status.is_client_error() {
            prop_assert!(
                answer["error"]["message"].is_string(),
                "{path} {status}: {answer}"
            );
            // A refused request changes nothing.
            prop_assert!(
                *last.borrow() == now,
                "{path} {status} changed what is stored"
            );
        }
        *last.borrow_mut() = now;
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
