//! `gatemesh bench heal` at a small size: four gates in this process over real QUIC on
//! loopback, two a side, heal; what the report says holds (every gate healed, the scans
//! made meanwhile admitted and everywhere, the changes moved counted in the links' books).

use clap::Parser;
use gatemesh_rehearse::bench::heal;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: heal::Args,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_gates_apart_two_a_side_each_end_up_holding_both_sides_and_the_scans_made_meanwhile() {
    let cli = Cli::parse_from([
        "heal",
        "--gates",
        "4",
        "--each",
        "40",
        "--held",
        "30",
        "--scans-per-s",
        "50",
    ]);
    let report = heal::run(&cli.args).await.unwrap();
    assert_eq!(report["sides"], serde_json::json!([2, 2]));
    // Each gate lacks the other side's 2 x 40.
    assert_eq!(report["changes_to_move"], 4 * 2 * 40);
    let healed = &report["healed_s"];
    assert!(
        healed["first_gate"].as_f64() <= healed["last_gate"].as_f64(),
        "{healed}"
    );
    // The bench returns once every gate holds the scans made while healing too: there were
    // some (one every 20 ms until the last gate healed), each admitted.
    let scans = report["scans_while_healing"]["n"].as_u64().unwrap();
    assert!(scans > 0, "{report}");
    let links = &report["links"];
    let taken = links["taken"].as_u64().unwrap();
    // Every change that had to move was taken from a link, and each scan's by three gates.
    assert!(taken >= 4 * 2 * 40 + 3 * scans, "{links}");
    assert_eq!(links["dropped"], 0, "{links}");
}
