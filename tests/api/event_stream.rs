//! Reading a server-sent event stream a frame at a time, as a dashboard does.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, assert_media_type};

/// A server-sent event stream, read a frame at a time.
pub struct EventStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

/// One frame of an event stream, by field (a comment line's text as `comment`).
#[derive(Debug, Default)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: Option<String>,
    pub comment: Option<String>,
    pub retry: Option<String>,
}

impl Frame {
    fn parse(text: &str) -> Frame {
        let mut frame = Frame::default();
        for line in text.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = Some(value.strip_prefix(' ').unwrap_or(value).to_owned());
            match field {
                "" => frame.comment = value,
                "id" => frame.id = value,
                "event" => frame.event = value,
                "data" => frame.data = value,
                "retry" => frame.retry = value,
                other => panic!("unexpected field {other:?} in {text:?}"),
            }
        }
        frame
    }

    /// `data`, parsed.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.data.as_deref().expect("a data line")).expect("JSON data")
    }

    /// The number at the end of the id (`<epoch>-<n>`), which increases along a stream.
    pub fn number(&self) -> u64 {
        let id = self.id.as_deref().expect("an id");
        id.rsplit_once('-').unwrap().1.parse().unwrap()
    }
}

impl EventStream {
    /// The stream of a 200 answer, after its first frame (the retry hint).
    pub async fn open(response: reqwest::Response) -> EventStream {
        assert_eq!(response.status(), StatusCode::OK);
        assert_media_type(&response, "text/event-stream");
        let mut stream = EventStream {
            response,
            buffer: Vec::new(),
        };
        let first = stream.frame().await.expect("a first frame");
        assert_eq!(first.retry.as_deref(), Some("2000"), "{first:?}");
        stream
    }

    /// The next frame, or `None` once the stream has ended; fails after 10 s without one.
    pub async fn frame(&mut self) -> Option<Frame> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let frame = Frame::parse(std::str::from_utf8(&self.buffer[..end]).unwrap());
                self.buffer.drain(..end + 2);
                return Some(frame);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .expect("a frame within 10 s")
                .expect("the stream reads");
            match chunk {
                Some(bytes) => self.buffer.extend_from_slice(&bytes),
                None => {
                    assert!(self.buffer.is_empty(), "a cut frame: {:?}", self.buffer);
                    return None;
                }
            }
        }
    }

    /// The next event (heartbeats skipped); fails if the stream ends.
    pub async fn event(&mut self) -> Frame {
        loop {
            let frame = self.frame().await.expect("the stream goes on");
            if frame.event.is_some() || frame.data.is_some() {
                return frame;
            }
        }
    }
}

/// The live stream of one load (`/v1/loads/{load}/tracking/stream`), opened
/// with the app's key, past its first frame.
pub async fn load_stream(app: &TestApp, load: &str) -> EventStream {
    let response = app
        .client
        .get(app.url(&format!("/loads/{load}/tracking/stream")))
        .bearer_auth(&app.key)
        .send()
        .await
        .unwrap();
    EventStream::open(response).await
}
