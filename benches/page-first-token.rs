//! How much later the page of `recall serve` shows an answer's first words than the API sends
//! them: one server, the same question asked in turn through the API (a streamed request, time
//! to the first content chunk) and through the page in headless Chromium (time from Enter to
//! the first text drawn under the question), each on a new conversation. Prints every round
//! and the medians.
//!
//! cargo run --release --example page-first-token -- --recall target/release/recall \
//!     --rounds 5 -- --model M.gguf --vault V [serve flags]

// A bench's figures are its output.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use fantoccini::wd::TimeoutConfiguration;
use fantoccini::{Client, ClientBuilder};
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// The `recall` binary.
    #[arg(long, default_value = "target/release/recall")]
    recall: PathBuf,
    /// Rounds; each asks once through the API and once through the page.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// The question.
    #[arg(long, default_value = "What does the launch note say?")]
    question: String,
    /// `recall serve`'s flags (model, vault, threads…); `--port 0` is added.
    #[arg(last = true)]
    serve: Vec<String>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    let (mut server, base) = start_server(&args)?;
    let mut driver = Command::new("chromedriver")
        .arg("--port=9517")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("chromedriver (Debian's chromium-driver) is needed")?;
    let result = runtime.block_on(rounds(&args, &base));
    let _ = driver.kill();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    let _ = server.wait();
    result
}

/// Starts `recall serve` and waits for the line that says where it listens.
fn start_server(args: &Args) -> Result<(Child, String)> {
    let mut server = Command::new(&args.recall)
        .arg("serve")
        .args(["--port", "0"])
        .args(&args.serve)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", args.recall.display()))?;
    let mut lines = BufReader::new(server.stderr.take().expect("piped")).lines();
    let base = loop {
        let Some(line) = lines.next().transpose()? else {
            bail!("recall serve ended before it listened");
        };
        if let Some((_, rest)) = line.split_once("serving the vault at ") {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches("/v1")
                .to_string();
        }
    };
    // Keep reading stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Ok((server, base))
}

async fn rounds(args: &Args, base: &str) -> Result<()> {
    let browser = open_browser().await?;
    // A turn of a real model takes longer than WebDriver's 30 s for a script.
    let long = Some(Duration::from_secs(600));
    browser
        .update_timeouts(TimeoutConfiguration::new(long, long, None))
        .await?;
    browser.goto(&format!("{base}/")).await?;
    let http = reqwest::Client::new();
    let (mut api, mut page) = (Vec::new(), Vec::new());
    println!("round\tapi_first_s\tpage_first_s");
    for round in 1..=args.rounds {
        let a = api_first_token(&http, base, &args.question).await?;
        let p = page_first_token(&browser, &args.question).await?;
        println!("{round}\t{a:.3}\t{p:.3}");
        api.push(a);
        page.push(p);
    }
    browser.close().await?;
    let (a, p) = (median(&mut api), median(&mut page));
    println!(
        "median: API {a:.3} s, page {p:.3} s, the page {:+.3} s after the API",
        p - a
    );
    Ok(())
}

async fn open_browser() -> Result<Client> {
    let Value::Object(capabilities) = json!({
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1000,900"]
        }
    }) else {
        unreachable!()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(capabilities.clone())
            .connect("http://127.0.0.1:9517")
            .await
        {
            Ok(client) => return Ok(client),
            Err(err) if Instant::now() > deadline => bail!("no browser: {err}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Seconds from sending a streamed request to its first chunk with text.
async fn api_first_token(http: &reqwest::Client, base: &str, question: &str) -> Result<f64> {
    let started = Instant::now();
    let response = http
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"stream": true, "messages": [{"role": "user", "content": question}]}))
        .send()
        .await?
        .error_for_status()?;
    let mut first = None;
    let mut body = response.bytes_stream();
    while let Some(bytes) = body.next().await {
        let bytes = bytes?;
        if first.is_none() && String::from_utf8_lossy(&bytes).contains("\"content\":\"") {
            let text = String::from_utf8_lossy(&bytes);
            // The role chunk carries an empty content; the answer's first words do not.
            if text
                .split("\"content\":\"")
                .skip(1)
                .any(|rest| !rest.starts_with('"'))
            {
                first = Some(started.elapsed().as_secs_f64());
            }
        }
    }
    first.context("the API sent no text")
}

/// Seconds from Enter on the page to the first text drawn in the new answer, read in the page
/// itself (a MutationObserver), on a new conversation.
async fn page_first_token(browser: &Client, question: &str) -> Result<f64> {
    let script = r#"
        const [question, done] = arguments;
        document.getElementById('new').click();
        const log = document.getElementById('log');
        let started = 0;
        const observer = new MutationObserver(() => {
            const text = log.querySelector('.turn:last-child .text');
            if (text && text.textContent.trim() !== '') {
                observer.disconnect();
                const first = (performance.now() - started) / 1000;
                const answer = log.querySelector('.turn:last-child .answer');
                const wait = () => answer.dataset.state === 'waiting' || answer.dataset.state === 'streaming'
                    ? setTimeout(wait, 50) : done(first);
                wait();
            }
        });
        observer.observe(log, {subtree: true, childList: true, characterData: true});
        document.getElementById('question').value = question;
        started = performance.now();
        document.getElementById('composer').requestSubmit();
    "#;
    let seconds = browser
        .execute_async(script, vec![json!(question)])
        .await
        .context("the page gave no answer")?;
    seconds.as_f64().context("the page's timing")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
