//! `recall serve`'s page in a real browser: Debian's headless Chromium, driven over WebDriver
//! (Debian's chromedriver, through `fantoccini`), against the real binary on the test model
//! and the real vault server. Set `RECALL_SCREENSHOTS=DIR` to keep what the browser saw.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::common;
use crate::serve::{LONG_QUESTION, QUESTION, Server, start_with_key};

/// How long the page may take for a turn of the test model (a slow CI machine included).
const TURN: Duration = Duration::from_secs(300);

/// A headless Chromium under its chromedriver; both end with it.
struct Browser {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// Where Debian puts a program, or where `PATH` finds it.
fn program(name: &str) -> PathBuf {
    let debian = Path::new("/usr/bin").join(name);
    if debian.is_file() {
        return debian;
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is missing: run scripts/setup (Debian's chromium and chromium-driver)")
        })
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium of `width` × `height`.
    fn open(width: u32, height: u32) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(program("chromedriver"))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().expect("a temporary folder");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let capabilities = json!({
            "goog:chromeOptions": {
                "binary": program("chromium"),
                "args": [
                    "--headless=new",
                    // Tests may run as root (CI), where Chromium's sandbox cannot start.
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", profile.path().display()),
                    format!("--window-size={width},{height}"),
                ],
            }
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let webdriver = format!("http://127.0.0.1:{port}");
        let client = runtime.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let connector = hyper_util::client::legacy::connect::HttpConnector::new();
                match ClientBuilder::new(connector)
                    .capabilities(capabilities.clone())
                    .connect(&webdriver)
                    .await
                {
                    Ok(client) => break client,
                    Err(err) if Instant::now() > deadline => {
                        panic!("no browser session from chromedriver: {err}")
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        });
        Browser {
            runtime,
            client: Some(client),
            driver,
            _profile: profile,
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("an open session")
    }

    fn go(&self, url: &str) {
        self.runtime
            .block_on(self.client().goto(url))
            .expect("the page loads");
    }

    /// Runs `script` in the page; returns what it returns.
    fn eval(&self, script: &str) -> Value {
        self.runtime
            .block_on(self.client().execute(script, Vec::new()))
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Waits until `script` returns true in the page; panics with `what` after `bound`.
    fn wait_for(&self, what: &str, bound: Duration, script: &str) {
        let deadline = Instant::now() + bound;
        while self.eval(script) != Value::Bool(true) {
            assert!(
                Instant::now() < deadline,
                "waited {bound:?} for {what}; the page shows: {}",
                self.eval("return document.body.innerText")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types `text` into the element `css`.
    fn type_into(&self, css: &str, text: &str) {
        self.runtime.block_on(async {
            let element = self.client().find(Locator::Css(css)).await.expect(css);
            element.send_keys(text).await.expect("typing")
        });
    }

    fn click(&self, css: &str) {
        self.runtime.block_on(async {
            let element = self.client().find(Locator::Css(css)).await.expect(css);
            element.click().await.expect("a click")
        });
    }

    /// Types a question and presses Enter, as a person would.
    fn ask(&self, question: &str) {
        let enter: char = Key::Enter.into();
        self.type_into("#question", &format!("{question}{enter}"));
    }

    /// Keeps a screenshot as `name`.png under `RECALL_SCREENSHOTS`, when it is set.
    fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("RECALL_SCREENSHOTS") else {
            return;
        };
        let png = self
            .runtime
            .block_on(self.client().screenshot())
            .expect("a screenshot");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The page's address on `server`.
fn page(server: &Server) -> String {
    server.base.trim_end_matches("v1").to_string()
}

/// The number of turns whose answer is in `state`.
fn answers_in(state: &str) -> String {
    format!(r#"return document.querySelectorAll('.answer[data-state="{state}"]').length"#)
}

#[test]
fn the_page_answers_with_sources_follows_up_and_keeps_the_conversation() {
    let server = start_with_key(Path::new(&common::fixture_vault()), "160", None);
    let browser = Browser::open(1000, 900);
    browser.go(&page(&server));
    browser.wait_for(
        "what the server runs on",
        TURN,
        r#"return document.getElementById('about-model').textContent.startsWith('Model: ')
            && document.getElementById('about-vault').textContent === 'Vault: vault'"#,
    );

    browser.ask(QUESTION);
    browser.wait_for(
        "the first answer",
        TURN,
        &format!("{} === 1", answers_in("done")),
    );
    let answer = browser.eval("return document.querySelector('.answer .text').innerText");
    assert!(!answer.as_str().unwrap().trim().is_empty(), "{answer}");
    // Every source is a link that opens the note in Obsidian, with the passage it read.
    let sources = browser.eval(
        r#"return [...document.querySelectorAll('.source')].map(s => ({
            href: s.querySelector('a.source-link').getAttribute('href'),
            label: s.querySelector('a.source-link').textContent,
            passage: s.querySelector('.passage').textContent}))"#,
    );
    let sources = sources.as_array().expect("a list");
    assert!(!sources.is_empty(), "no sources under the answer");
    for source in sources {
        let href = source["href"].as_str().unwrap();
        assert!(
            href.starts_with("obsidian://open?vault=vault&file="),
            "{href}"
        );
        assert!(!source["label"].as_str().unwrap().is_empty());
        assert!(!source["passage"].as_str().unwrap().trim().is_empty());
    }
    browser.eval("document.querySelector('.passage').hidden = true");
    browser.click(".passage-toggle");
    assert_eq!(
        browser.eval("return document.querySelector('.passage').hidden"),
        Value::Bool(false),
        "the passage did not open"
    );
    let timing = browser.eval("return document.querySelector('.timing').textContent");
    assert!(timing.as_str().unwrap().contains("s in all"), "{timing}");
    browser.screenshot("page-answer");

    // A follow-up goes with the conversation so far.
    browser.ask("And what else does it say?");
    browser.wait_for(
        "the follow-up",
        TURN,
        &format!("{} === 2", answers_in("done")),
    );
    let stderr = server.stderr();
    assert!(stderr.contains("#2: answered in "), "{stderr}");

    // A reload keeps the conversation; a new one starts clean.
    browser
        .runtime
        .block_on(browser.client().refresh())
        .unwrap();
    browser.wait_for(
        "the conversation after a reload",
        Duration::from_secs(30),
        &format!("{} === 2", answers_in("done")),
    );
    browser.click("#new");
    assert_eq!(
        browser.eval(
            "return [document.querySelectorAll('.turn').length, localStorage.getItem('recall.conversation')]"
        ),
        json!([0, "[]"])
    );
    drop(browser);
    server.stop();
}

#[test]
fn stop_ends_the_turn_on_the_server_and_the_next_question_is_answered() {
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let server = start_with_key(&vault, "400", None);
    let browser = Browser::open(1000, 900);
    browser.go(&page(&server));
    // Esc as soon as the first words are drawn while the answer is still being written (the
    // test model writes a whole answer in well under a second: polling from here would miss
    // that moment).
    browser.eval(
        r#"const log = document.getElementById('log');
           new MutationObserver((_, observer) => {
               const answer = log.querySelector('.turn:last-child .answer');
               if (answer && answer.dataset.state === 'streaming'
                   && answer.querySelector('.text').textContent.trim() !== '') {
                   observer.disconnect();
                   document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}));
               }
           }).observe(log, {subtree: true, childList: true, characterData: true, attributes: true});"#,
    );
    browser.ask(LONG_QUESTION);
    browser.wait_for(
        "the turn to stop",
        Duration::from_secs(10),
        &format!("{} === 1", answers_in("stopped")),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .stderr()
        .contains("#1: stopped: the client went away")
    {
        assert!(
            Instant::now() < deadline,
            "the server went on: {}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    browser.ask(QUESTION);
    browser.wait_for(
        "the next answer",
        TURN,
        &format!("{} === 1", answers_in("done")),
    );
    drop(browser);
    server.stop();
}

#[test]
fn on_a_phone_sized_window_the_page_asks_for_the_key_once_and_fits() {
    let server = start_with_key(Path::new(&common::fixture_vault()), "60", Some("test-key"));
    let browser = Browser::open(390, 844);
    browser.go(&page(&server));
    browser.wait_for(
        "the page to ask for the key",
        Duration::from_secs(30),
        "return !document.getElementById('key-form').hidden",
    );
    browser.type_into("#key-input", "test-key");
    browser.click("#key-save");
    browser.wait_for(
        "what the server runs on, with the key",
        Duration::from_secs(30),
        "return document.getElementById('about-model').textContent.startsWith('Model: ')",
    );
    browser.ask(QUESTION);
    browser.wait_for("the answer", TURN, &format!("{} === 1", answers_in("done")));
    // Nothing wider than the window: no sideways scrolling on a phone.
    assert_eq!(
        browser.eval("return document.documentElement.scrollWidth <= window.innerWidth"),
        Value::Bool(true)
    );
    browser.screenshot("page-phone");
    drop(browser);
    server.stop();
}

#[test]
fn the_page_summarizes_a_folder_makes_quiz_items_and_reviews_a_card() {
    let vault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sample-vault");
    let server = start_with_key(&vault, "200", None);
    let browser = Browser::open(1000, 900);
    browser.go(&page(&server));
    browser.click("#tab-study");
    browser.wait_for(
        "the deck, empty",
        Duration::from_secs(30),
        "return document.getElementById('review-due').textContent.startsWith('Nothing due (0 cards')",
    );

    // A folder's summary: points, each linked to the note and heading it comes from.
    browser.type_into("#study-target", "Cells");
    browser.click("#summarize");
    browser.wait_for(
        "the summary",
        TURN,
        "return document.querySelectorAll('#study-result .points li').length > 0",
    );
    let links = browser.eval(
        "return [...document.querySelectorAll('#study-result .points a')].map(a => a.getAttribute('href'))",
    );
    let links = links.as_array().expect("a list");
    assert!(!links.is_empty(), "no point is linked to its note");
    for href in links {
        let href = href.as_str().unwrap();
        assert!(
            href.starts_with("obsidian://open?vault=sample-vault&file="),
            "{href}"
        );
    }
    let progress = browser.eval("return document.getElementById('study-progress').textContent");
    assert!(
        progress.as_str().unwrap().starts_with("Done in "),
        "{progress}"
    );
    browser.screenshot("page-summary");

    // Quiz items, added to the deck that review asks from.
    browser.eval("document.getElementById('study-target').value = 'Mitochondria'");
    browser.eval("document.getElementById('quiz-count').value = '2'");
    browser.click("#make-quiz");
    browser.wait_for(
        "the quiz items",
        TURN,
        "return document.querySelectorAll('#study-result .quiz li').length > 0",
    );
    browser.wait_for(
        "the new cards to be due",
        Duration::from_secs(30),
        "return !document.getElementById('review-start').hidden",
    );

    // One card reviewed: a typed answer graded by the model, and the card scheduled.
    browser.click("#review-start");
    browser.type_into("#review-answer", "It makes energy for the cell.");
    browser.click("#review-grade");
    browser.wait_for(
        "the grade",
        TURN,
        "return !document.getElementById('review-result').hidden \
            || document.getElementById('study-progress').textContent.includes('failed')",
    );
    let result = browser.eval("return document.getElementById('review-result').innerText");
    assert!(
        result.as_str().unwrap().contains("The note says: "),
        "{result}"
    );
    browser.screenshot("page-review");
    drop(browser);
    let stderr = server.stop();
    assert!(stderr.contains("summarizing Cells: done in "), "{stderr}");
    assert!(stderr.contains("grading an answer: done in "), "{stderr}");
}
