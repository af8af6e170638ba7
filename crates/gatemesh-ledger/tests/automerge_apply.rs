//! The ledger's automerge is patched (`vendor/automerge`, see its `GATEMESH.md`): applying a
//! change from outside skips the keys of a map the change does not write, where upstream
//! 0.12 walks the map from its first key. These tests hold the patched apply to a model of
//! what a map must show after any set of concurrent writes and deletes: a value is visible
//! at its key exactly when it was put and no operation names it as a predecessor.
//!
//! The documents under test start from a saved base with hundreds of keys per map (so the
//! seek crosses the column's slabs), and take the actors' changes in one batch, in shuffled
//! chunks (out of causal order, so some wait in automerge's queue), and by merging.

use std::collections::{BTreeMap, HashMap, HashSet};

use automerge::{
    ActorId, AutoCommit, ChangeHash, ObjId, ObjType, ROOT, ReadDoc, ScalarValue, Value, legacy,
    transaction::Transactable,
};
use proptest::prelude::*;

const ACTORS: usize = 3;
/// An operation's id as automerge orders it: counter, then actor.
type OpId = (u64, ActorId);
/// Per map and key, the values visible there.
type Shown = BTreeMap<(String, String), Vec<String>>;
const MAPS: [&str; 2] = ["a", "b"];
/// Keys the base document holds in each map.
const BASE_KEYS: usize = 400;

fn base_key(i: usize) -> String {
    format!("t{i:04},1")
}

/// The keys the actors write: some the base holds, some that sort between, before or after
/// them, and prefixes of base keys (the ledger's keys are `"<tid>,<id>"`).
fn key_alphabet() -> Vec<String> {
    let mut keys: Vec<String> = (0..BASE_KEYS).step_by(37).map(base_key).collect();
    keys.extend((0..BASE_KEYS).step_by(53).map(|i| format!("t{i:04},0")));
    keys.extend((0..BASE_KEYS).step_by(71).map(|i| format!("t{i:04}")));
    keys.extend(["", "a", "t", "t9999,9", "zz"].map(String::from));
    keys
}

#[derive(Debug, Clone)]
enum Step {
    Put {
        actor: usize,
        map: usize,
        key: usize,
        long: bool,
    },
    Delete {
        actor: usize,
        map: usize,
        key: usize,
    },
    Commit {
        actor: usize,
    },
    Merge {
        from: usize,
        to: usize,
    },
}

fn step(keys: usize) -> impl Strategy<Value = Step> {
    let actor = 0..ACTORS;
    let map = 0..MAPS.len();
    prop_oneof![
        6 => (actor.clone(), map.clone(), 0..keys, any::<bool>())
            .prop_map(|(actor, map, key, long)| Step::Put { actor, map, key, long }),
        2 => (actor.clone(), map, 0..keys).prop_map(|(actor, map, key)| Step::Delete { actor, map, key }),
        3 => actor.clone().prop_map(|actor| Step::Commit { actor }),
        2 => (actor.clone(), actor).prop_map(|(from, to)| Step::Merge { from, to }),
    ]
}

fn map_id(doc: &impl ReadDoc, name: &str) -> ObjId {
    match doc.get(ROOT, name).expect("read root") {
        Some((Value::Object(ObjType::Map), id)) => id,
        other => panic!("no map {name}: {other:?}"),
    }
}

fn base() -> AutoCommit {
    let mut doc = AutoCommit::new().with_actor(ActorId::from([0xb0; 16]));
    for name in MAPS {
        let map = doc.put_object(ROOT, name, ObjType::Map).expect("map");
        for i in 0..BASE_KEYS {
            doc.put(&map, base_key(i), format!("base {name} {i}"))
                .expect("put");
        }
    }
    doc.commit();
    doc
}

/// What every map must show: per map and key, the values put and never named as a
/// predecessor, in operation-id order (counter, then actor), as automerge lists them.
fn model(changes: &[automerge::Change]) -> Shown {
    let mut map_names: HashMap<legacy::ObjectId, String> = HashMap::new();
    let mut puts: Vec<(legacy::ObjectId, String, OpId, String)> = Vec::new();
    let mut overwritten: HashSet<OpId> = HashSet::new();
    for change in changes {
        let expanded = change.decode();
        for (i, op) in expanded.operations.iter().enumerate() {
            let id = (
                expanded.start_op.get() + i as u64,
                expanded.actor_id.clone(),
            );
            for pred in op.pred.iter() {
                overwritten.insert((pred.0, pred.1.clone()));
            }
            let legacy::Key::Map(key) = &op.key else {
                panic!("only maps here");
            };
            match &op.action {
                legacy::OpType::Make(ObjType::Map) => {
                    map_names.insert(
                        legacy::ObjectId::Id(legacy::OpId(id.0, id.1.clone())),
                        key.to_string(),
                    );
                }
                legacy::OpType::Put(ScalarValue::Str(value)) => {
                    puts.push((op.obj.clone(), key.to_string(), id, value.to_string()))
                }
                legacy::OpType::Delete => {}
                other => panic!("unexpected op {other:?}"),
            }
        }
    }
    let mut visible: BTreeMap<(String, String), Vec<(OpId, String)>> = BTreeMap::new();
    for (obj, key, id, value) in puts {
        if overwritten.contains(&id) {
            continue;
        }
        let map = map_names.get(&obj).expect("put into a known map").clone();
        visible.entry((map, key)).or_default().push((id, value));
    }
    visible
        .into_iter()
        .map(|(at, mut values)| {
            values.sort_by(|(a, _), (b, _)| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            (at, values.into_iter().map(|(_, v)| v).collect())
        })
        .collect()
}

/// What `doc` shows, in the model's shape.
fn shown(doc: &AutoCommit) -> Shown {
    let mut out = BTreeMap::new();
    for name in MAPS {
        let map = map_id(doc, name);
        let keys: Vec<String> = doc.keys(&map).collect();
        let disorder = keys.windows(2).find(|pair| pair[0] >= pair[1]);
        assert_eq!(disorder, None, "keys of {name} in order, each once");
        assert_eq!(doc.values(&map).count(), keys.len(), "values of {name}");
        for key in keys {
            let values: Vec<String> = doc
                .get_all(&map, key.as_str())
                .expect("get_all")
                .into_iter()
                .map(|(value, _)| match value {
                    Value::Scalar(s) => match s.as_ref() {
                        ScalarValue::Str(v) => v.to_string(),
                        other => panic!("unexpected value {other:?}"),
                    },
                    other => panic!("unexpected value {other:?}"),
                })
                .collect();
            assert!(!values.is_empty(), "{name}/{key} listed with no value");
            // The winner automerge answers with is the last of the conflicting values.
            let winner = doc.get(&map, key.as_str()).expect("get").map(|(v, _)| v);
            assert_eq!(
                winner.map(|v| v.into_string().expect("string")),
                values.last().cloned()
            );
            out.insert((name.to_string(), key), values);
        }
        // The reads that go by automerge's index of each key's winning value (`top`), which
        // apply keeps up to date, must agree with the ones above.
        let winners: Vec<(String, String, bool)> = out
            .iter()
            .filter(|((map, _), _)| map == name)
            .map(|((_, key), values)| {
                let winner = values.last().expect("a value").clone();
                (key.clone(), winner, values.len() > 1)
            })
            .collect();
        let ranged: Vec<(String, String, bool)> = doc
            .map_range(&map, ..)
            .map(|item| {
                let value = Value::from(item.value).into_string().expect("string");
                (item.key.to_string(), value, item.conflict)
            })
            .collect();
        assert_eq!(ranged, winners, "map_range of {name}");
        assert_eq!(doc.length(&map), winners.len(), "length of {name}");
    }
    out
}

/// Plays `steps` on forks of `base`; returns every change made, the base's among them.
fn play(base: &mut AutoCommit, steps: &[Step], keys: &[String]) -> Vec<automerge::Change> {
    let mut docs: Vec<AutoCommit> = (0..ACTORS)
        .map(|i| base.fork().with_actor(ActorId::from([i as u8 + 1; 16])))
        .collect();
    for (n, step) in steps.iter().enumerate() {
        match *step {
            Step::Put {
                actor,
                map,
                key,
                long,
            } => {
                let doc = &mut docs[actor];
                let obj = map_id(doc, MAPS[map]);
                let mut value = format!("actor {actor} step {n}");
                if long {
                    value.push_str(&"·".repeat(40));
                }
                doc.put(&obj, keys[key].as_str(), value).expect("put");
            }
            Step::Delete { actor, map, key } => {
                let doc = &mut docs[actor];
                let obj = map_id(doc, MAPS[map]);
                if doc.get(&obj, keys[key].as_str()).expect("get").is_some() {
                    doc.delete(&obj, keys[key].as_str()).expect("delete");
                }
            }
            Step::Commit { actor } => {
                docs[actor].commit();
            }
            Step::Merge { from, to } => {
                if from != to {
                    // What `from` sends is what it has committed: a clone that commits the
                    // open transaction would make a second change with the same sequence.
                    docs[from].commit();
                    let mut source = docs[from].clone();
                    docs[to].merge(&mut source).expect("merge");
                }
            }
        }
    }
    let mut seen: HashSet<ChangeHash> = HashSet::new();
    let mut changes = Vec::new();
    for doc in &mut docs {
        doc.commit();
        for change in doc.get_changes(&[]) {
            if seen.insert(change.hash()) {
                changes.push(change);
            }
        }
    }
    changes
}

fn loaded(base: &mut AutoCommit) -> AutoCommit {
    AutoCommit::load(&base.save()).expect("load base")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn peers_changes_show_what_the_model_says_however_they_arrive(
        steps in prop::collection::vec(step(key_alphabet().len()), 1..80),
        order in any::<u64>(),
        chunks in prop::collection::vec(1usize..6, 1..40),
    ) {
        let keys = key_alphabet();
        let mut base = base();
        let changes = play(&mut base, &steps, &keys);
        let want = model(&changes);

        // All at once.
        let mut at_once = loaded(&mut base);
        at_once.apply_changes(changes.clone()).expect("apply");
        prop_assert_eq!(&shown(&at_once), &want);

        // Shuffled, in chunks: changes whose dependencies have not come wait in the queue.
        let mut shuffled = changes.clone();
        let mut state = order | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (state >> 33) as usize % (i + 1));
        }
        let mut in_chunks = loaded(&mut base);
        let mut rest = shuffled.as_slice();
        let mut sizes = chunks.iter().cycle();
        while !rest.is_empty() {
            let n = (*sizes.next().expect("cycle")).min(rest.len());
            in_chunks.apply_changes(rest[..n].to_vec()).expect("apply chunk");
            rest = &rest[n..];
        }
        prop_assert_eq!(&shown(&in_chunks), &want);
        prop_assert_eq!(in_chunks.get_heads(), at_once.get_heads());

        // Saved and loaded again: what apply built is what the document stores.
        let mut reloaded = AutoCommit::load(&in_chunks.save()).expect("reload");
        prop_assert_eq!(&shown(&reloaded), &want);
        prop_assert_eq!(reloaded.get_heads(), at_once.get_heads());
    }
}

/// The case the patch is for, spelled out: one peer's change to a key deep in a large map,
/// on top of a conflict two other peers made at that key.
#[test]
fn a_change_deep_in_a_large_map_resolves_the_conflict_it_names() {
    let keys = key_alphabet();
    let deep = keys
        .iter()
        .position(|k| k == &base_key(370))
        .expect("a deep base key is in the alphabet");
    let steps = [
        Step::Put {
            actor: 0,
            map: 1,
            key: deep,
            long: false,
        },
        Step::Put {
            actor: 1,
            map: 1,
            key: deep,
            long: true,
        },
        Step::Commit { actor: 0 },
        Step::Commit { actor: 1 },
        Step::Merge { from: 0, to: 2 },
        Step::Merge { from: 1, to: 2 },
        Step::Put {
            actor: 2,
            map: 1,
            key: deep,
            long: false,
        },
    ];
    let mut base = base();
    let changes = play(&mut base, &steps, &keys);
    let mut doc = loaded(&mut base);
    let conflicted: Vec<_> = changes
        .iter()
        .filter(|c| c.actor_id() != &ActorId::from([3; 16]))
        .cloned()
        .collect();
    doc.apply_changes(conflicted).expect("apply the conflict");
    let map = map_id(&doc, "b");
    assert_eq!(
        doc.get_all(&map, base_key(370).as_str())
            .expect("get_all")
            .len(),
        2
    );

    doc.apply_changes(changes.clone())
        .expect("apply the resolution");
    let values = doc.get_all(&map, base_key(370).as_str()).expect("get_all");
    assert_eq!(
        values.len(),
        1,
        "the resolving put overwrote both: {values:?}"
    );
    assert_eq!(
        values[0].0.clone().into_string().expect("string"),
        "actor 2 step 6"
    );
    assert_eq!(shown(&doc), model(&changes));
}

/// A change whose first key holds a concurrent value with a greater id, and which writes a
/// later key too: moving on to the later key must not skip the value that wins the first.
#[test]
fn a_change_that_loses_at_one_key_and_writes_a_later_one_shows_the_winner() {
    let keys = key_alphabet();
    let at = |key: &str| keys.iter().position(|k| k == key).expect("in the alphabet");
    let (first, later) = (at(&base_key(111)), at(&base_key(333)));
    let mut steps: Vec<Step> = (0..5)
        .map(|key| Step::Put {
            actor: 1,
            map: 0,
            key,
            long: false,
        })
        .collect();
    steps.extend([
        Step::Put {
            actor: 1,
            map: 0,
            key: first,
            long: false,
        },
        Step::Commit { actor: 1 },
        Step::Put {
            actor: 0,
            map: 0,
            key: first,
            long: false,
        },
        Step::Put {
            actor: 0,
            map: 0,
            key: later,
            long: false,
        },
        Step::Commit { actor: 0 },
    ]);
    let mut base = base();
    let changes = play(&mut base, &steps, &keys);
    let (ones, zeros): (Vec<_>, Vec<_>) = changes
        .iter()
        .filter(|c| c.actor_id() != &ActorId::from([0xb0; 16]))
        .cloned()
        .partition(|c| c.actor_id() == &ActorId::from([2; 16]));
    let mut doc = loaded(&mut base);
    doc.apply_changes(ones).expect("the winner first");
    doc.apply_changes(zeros)
        .expect("then the change that loses at the first key");
    let map = map_id(&doc, "a");
    let (winner, _) = doc
        .get(&map, base_key(111).as_str())
        .expect("get")
        .expect("a value");
    assert_eq!(winner.into_string().expect("string"), "actor 1 step 5");
    assert_eq!(shown(&doc), model(&changes));
}

/// The second patch (`slabbed_values`): a loaded document's values come back in slabs of
/// about 4 KiB, each ending where a value ends. Values of every size — none (integers,
/// null), empty, a few bytes, over a slab's budget — read back after a load, after another
/// actor's changes land among them (so slabs split), and after a second save and load.
#[test]
fn a_loaded_documents_values_read_back_however_the_slabs_fall() {
    let value = |i: usize| -> ScalarValue {
        match i % 7 {
            0 => ScalarValue::Int(i as i64),
            1 => ScalarValue::Null,
            2 => ScalarValue::Str("".into()),
            3 => ScalarValue::Str("x".repeat(5_000 + i).into()),
            4 => ScalarValue::Bytes(vec![i as u8; 300]),
            _ => ScalarValue::Str(format!("record {i} {}", "y".repeat(i % 97)).into()),
        }
    };
    let mut doc = AutoCommit::new().with_actor(ActorId::from([1; 16]));
    let map = doc.put_object(ROOT, "m", ObjType::Map).unwrap();
    for i in 0..2_000 {
        doc.put(&map, format!("k{i:05}"), value(i)).unwrap();
    }
    doc.commit();
    let mut expected: BTreeMap<String, ScalarValue> =
        (0..2_000).map(|i| (format!("k{i:05}"), value(i))).collect();
    let read = |doc: &AutoCommit| -> BTreeMap<String, ScalarValue> {
        let map = map_id(doc, "m");
        doc.keys(&map)
            .map(|key| {
                let Some((Value::Scalar(v), _)) = doc.get(&map, key.as_str()).unwrap() else {
                    panic!("a scalar at {key}")
                };
                (key, v.into_owned())
            })
            .collect()
    };
    let mut loaded = AutoCommit::load(&doc.save()).unwrap();
    assert_eq!(read(&loaded), expected, "after the load");
    // Another actor overwrites and adds keys spread over the map, one change each.
    let mut other = AutoCommit::load(&doc.save())
        .unwrap()
        .with_actor(ActorId::from([2; 16]));
    let map2 = map_id(&other, "m");
    for i in (0..2_000).step_by(37).chain([1_999]) {
        let (key, new) = (format!("k{i:05}"), value(i + 3));
        other.put(&map2, key.as_str(), new.clone()).unwrap();
        other.put(&map2, format!("{key}+"), value(i + 4)).unwrap();
        other.commit();
        expected.insert(key.clone(), new);
        expected.insert(format!("{key}+"), value(i + 4));
    }
    let changes = other.get_changes(&doc.get_heads());
    for change in changes {
        loaded.apply_changes([change]).unwrap();
    }
    assert_eq!(read(&loaded), expected, "after changes landed among them");
    let again = AutoCommit::load(&loaded.save()).unwrap();
    assert_eq!(read(&again), expected, "after a second save and load");
}
