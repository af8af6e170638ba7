//! Waiting: a check that comes to hold ends the wait; one that never does fails it, named.

use std::{cell::Cell, time::Duration};

use super::{poll, poll_async};

const SHORT: Duration = Duration::from_millis(200);
const EVERY: Duration = Duration::from_millis(5);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn a_wait_ends_once_the_check_holds() {
    let looks = Cell::new(0);
    poll("the third look", SHORT, EVERY, || {
        looks.set(looks.get() + 1);
        looks.get() == 3
    });
    assert_eq!(looks.get(), 3);
    let looks = Cell::new(0);
    runtime().block_on(poll_async("the third look", SHORT, EVERY, || {
        looks.set(looks.get() + 1);
        std::future::ready(looks.get() == 3)
    }));
    assert_eq!(looks.get(), 3);
}

#[test]
#[should_panic(expected = "timed out waiting until never")]
fn a_wait_that_never_ends_fails() {
    poll("never", SHORT, EVERY, || false);
}

#[test]
#[should_panic(expected = "timed out waiting until never")]
fn an_async_wait_that_never_ends_fails() {
    runtime().block_on(poll_async("never", SHORT, EVERY, || {
        std::future::ready(false)
    }));
}
