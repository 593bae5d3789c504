//! Time the stages of encoding a file: `cargo run --release --example profile_encode -- TOKENIZER.json FILE`.

use std::time::Instant;
use tokensmith::added_tokens::Allowed;
use tokensmith::Tokenizer;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: profile_encode TOKENIZER.json FILE");
        std::process::exit(2);
    }
    let tok = Tokenizer::from_json(&std::fs::read_to_string(&args[1]).expect("read tokenizer")).expect("load");
    let text = std::fs::read_to_string(&args[2]).expect("read text");
    let mb = text.len() as f64 / 1e6;
    for round in 0..2 {
        let t = Instant::now();
        let ids = tok.encode(&text, &Allowed::None, None, false).expect("encode");
        let dt = t.elapsed().as_secs_f64();
        println!("round {round}: {} tokens, {:.1} MB/s", ids.len(), mb / dt);
    }
    if let Some(regex) = tok.split_regex() {
        let pat = tokensmith::pattern::Pattern::regex(&regex).expect("regex");
        let t = Instant::now();
        let mut out = Vec::new();
        pat.find_iter(&text, &mut out).expect("split");
        println!(
            "split only: {} pieces, {:.1} MB/s",
            out.len(),
            mb / t.elapsed().as_secs_f64()
        );
    }
}
