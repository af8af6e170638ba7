//! Request bodies for fuzzing an HTTP API: JSON shaped like the real bodies (the keys they
//! use, values of every type, and some values that mean something to the endpoint), and
//! plain noise.

use proptest::prelude::*;
use serde_json::{Value, json};

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
