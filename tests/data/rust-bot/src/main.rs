// A Least Score bot in Rust with the standard library only (docs/REGISTRY.md, "Toolchains outside /usr").
// It throws its highest card and draws from the deck; it never declares.
use std::io::{self, BufRead, Write};

fn value(card: &str) -> u32 {
    match card.as_bytes()[0] {
        b'A' => 1,
        b'T' | b'J' | b'Q' | b'K' => 10,
        digit => (digit - b'0') as u32,
    }
}

/// The cards of the JSON array that follows `"hand":` in `line` (hand-parsed: no crates).
fn hand(line: &str) -> Vec<String> {
    let start = line.find("\"hand\":[").map(|at| at + 8).unwrap_or(line.len());
    let end = line[start..].find(']').map(|at| start + at).unwrap_or(start);
    line[start..end].split(',').map(|card| card.trim().trim_matches('"').to_string())
        .filter(|card| card.len() == 2).collect()
}

fn main() {
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        let reply = if line.contains("\"type\":\"hello\"") {
            "{\"type\":\"ready\"}".to_string()
        } else if line.contains("\"type\":\"turn\"") {
            let cards = hand(&line);
            let highest = cards.iter().max_by_key(|card| value(card)).expect("a hand");
            format!("{{\"type\":\"play\",\"discard\":[\"{}\"],\"take\":\"deck\"}}", highest)
        } else {
            continue;
        };
        writeln!(out, "{}", reply).expect("stdout");
        out.flush().expect("stdout"); // one line per reply, at once: the referee waits for it
    }
}
