//! A real headless Chromium driven over WebDriver by Debian's chromedriver, shared by the CLI
//! tests (`util::Browser`) and `cargo xtask bench-ingest --browser` (included there by path):
//! one client for both, with std, serde_json and base64 (the screenshots) only.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A real headless Chromium driven over WebDriver by Debian's chromedriver (`chromium-driver`),
/// for the web view's tests; the session is ended and the driver killed when dropped. The
/// protocol is JSON over plain HTTP, spoken here with std's TcpStream (a request per
/// connection): a client crate would be most of a browser-automation stack for four calls.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless session; panics, naming the
    /// package, when the browser or its driver is not installed (CI installs both).
    pub fn start() -> Browser {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("Debian's chromium is needed (cargo xtask ci installs it): apt-get install chromium");
        assert!(
            Path::new("/usr/bin/chromedriver").exists(),
            "Debian's chromedriver is needed (cargo xtask ci installs it): apt-get install chromium-driver"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut browser = Browser { driver, port, session: String::new() };
        let deadline = Instant::now() + Duration::from_secs(20);
        while browser.call("GET", "/status", None).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer within 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1200,800",
        ];
        let capabilities = serde_json::json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let session = browser.call("POST", "/session", Some(capabilities)).unwrap();
        browser.session =
            session["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {session}")).to_owned();
        browser
    }

    /// Opens `url` in the session's tab.
    pub fn go(&self, url: &str) {
        let path = format!("/session/{}/url", self.session);
        self.call("POST", &path, Some(serde_json::json!({"url": url}))).unwrap();
    }

    /// Runs `script` (a function body) in the page; what it returns.
    pub fn run(&self, script: &str) -> serde_json::Value {
        let path = format!("/session/{}/execute/sync", self.session);
        self.call("POST", &path, Some(serde_json::json!({"script": script, "args": []}))).unwrap()
    }

    /// Saves what the tab shows as `NAME.png` under `target/screenshots/` (or `PVFS_SCREENSHOTS`),
    /// where CI leaves them for a person to look at; returns the file. The PNG is checked to be
    /// one of the window's size, so a blank or failed capture fails the test.
    pub fn screenshot(&self, name: &str) -> std::path::PathBuf {
        use base64::Engine;
        let path = format!("/session/{}/screenshot", self.session);
        let encoded = self.call("GET", &path, None).unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_else(|| panic!("no screenshot: {encoded}")))
            .unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        // IHDR's width and height (big-endian, at bytes 16..24).
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert!(width >= 800 && height >= 600, "a {width}×{height} screenshot");
        // The workspace's target, found from whichever crate includes this file (the CLI
        // tests' or the xtask's, at different depths).
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.ancestors().find(|d| d.join("Cargo.lock").exists()).unwrap_or(manifest);
        let dir = std::env::var_os("PVFS_SCREENSHOTS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root.join("target/screenshots"));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{name}.png"));
        std::fs::write(&file, png).unwrap();
        file
    }

    /// One WebDriver command: its `value`, or the connection's error.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> std::io::Result<serde_json::Value> {
        use std::io::{Read, Write};
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        // chromedriver keeps the connection open whatever the request says: the body is read
        // to its Content-Length.
        let mut answer = Vec::new();
        let mut buf = [0u8; 65536];
        let body_at = loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Err(std::io::Error::other("chromedriver closed the connection"));
            }
            answer.extend_from_slice(&buf[..n]);
            if let Some(at) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&answer[..body_at]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while answer.len() < body_at + length {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
        let json = String::from_utf8_lossy(&answer[body_at..]);
        let doc: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| std::io::Error::other(format!("{e}: {json}")))?;
        Ok(doc["value"].clone())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
