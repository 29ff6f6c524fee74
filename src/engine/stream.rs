//! Turns decoded token bytes into streamed text: UTF-8 safe across token boundaries, and holding
//! back any tail that could still become a stop string so a stop string never reaches the user.

/// Incremental decoder for one generation.
#[derive(Debug)]
pub struct TextStream {
    stops: Vec<String>,
    /// Bytes of a UTF-8 character split across tokens, waiting for the rest.
    partial: Vec<u8>,
    /// Decoded text not yet handed out (it may be the start of a stop string).
    held: String,
    /// Everything handed out so far.
    emitted: String,
}

/// What one push produced.
#[derive(Debug, Default, PartialEq)]
pub struct Pushed {
    /// Text that is now final and may be shown.
    pub text: String,
    /// The stop string that just completed, if any; generation should end.
    pub stopped_on: Option<String>,
}

impl TextStream {
    /// A stream that ends on any of `stops` (empty strings are ignored).
    pub fn new(stops: &[String]) -> TextStream {
        TextStream {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            partial: Vec::new(),
            held: String::new(),
            emitted: String::new(),
        }
    }

    /// Feeds the bytes of one token.
    pub fn push(&mut self, bytes: &[u8]) -> Pushed {
        self.partial.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.partial) {
            Ok(s) => s.len(),
            // An error with no length is an incomplete character at the end: wait for more bytes.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            // Really invalid bytes: replace them rather than stall the stream forever.
            Err(_) => {
                let text = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                return self.accept(&text);
            }
        };
        let rest = self.partial.split_off(valid);
        let text = String::from_utf8(std::mem::replace(&mut self.partial, rest))
            .expect("prefix was checked to be valid UTF-8");
        self.accept(&text)
    }

    fn accept(&mut self, text: &str) -> Pushed {
        self.held.push_str(text);
        if let Some((at, stop)) = self.earliest_stop() {
            self.held.truncate(at);
            let out = std::mem::take(&mut self.held);
            self.emitted.push_str(&out);
            return Pushed {
                text: out,
                stopped_on: Some(stop),
            };
        }
        // Keep back the longest tail that is a prefix of some stop string.
        let keep = self.longest_stop_prefix_suffix();
        let cut = self.held.len() - keep;
        let out: String = self.held.drain(..cut).collect();
        self.emitted.push_str(&out);
        Pushed {
            text: out,
            stopped_on: None,
        }
    }

    /// Ends the stream: whatever was held back is final now.
    pub fn finish(&mut self) -> String {
        if !self.partial.is_empty() {
            let tail = String::from_utf8_lossy(&self.partial).into_owned();
            self.partial.clear();
            self.held.push_str(&tail);
        }
        let out = std::mem::take(&mut self.held);
        self.emitted.push_str(&out);
        out
    }

    /// All text handed out so far.
    pub fn text(&self) -> &str {
        &self.emitted
    }

    fn earliest_stop(&self) -> Option<(usize, String)> {
        self.stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()).map(|at| (at, s.clone())))
            .min_by_key(|(at, _)| *at)
    }

    fn longest_stop_prefix_suffix(&self) -> usize {
        let mut keep = 0;
        for stop in &self.stops {
            for (i, _) in stop.char_indices().skip(1) {
                if i > keep && self.held.ends_with(&stop[..i]) {
                    keep = i;
                }
            }
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(stream: &mut TextStream, pieces: &[&[u8]]) -> (String, Option<String>) {
        let mut out = String::new();
        for piece in pieces {
            let pushed = stream.push(piece);
            out.push_str(&pushed.text);
            if pushed.stopped_on.is_some() {
                return (out, pushed.stopped_on);
            }
        }
        out.push_str(&stream.finish());
        (out, None)
    }

    #[test]
    fn joins_a_character_split_across_tokens() {
        let crab = "🦀".as_bytes();
        let mut stream = TextStream::new(&[]);
        assert_eq!(stream.push(&crab[..2]).text, "");
        assert_eq!(stream.push(&crab[2..]).text, "🦀");
    }

    #[test]
    fn stops_on_a_stop_string_split_across_tokens_and_hides_it() {
        let mut stream = TextStream::new(&["</end>".to_string()]);
        let (text, stop) = feed(&mut stream, &[b"Hello </", b"en", b"d> tail"]);
        assert_eq!(text, "Hello ");
        assert_eq!(stop.as_deref(), Some("</end>"));
    }

    #[test]
    fn releases_a_false_start_of_a_stop_string() {
        let mut stream = TextStream::new(&["STOP".to_string()]);
        assert_eq!(stream.push(b"a ST").text, "a ");
        assert_eq!(stream.push(b"AR").text, "STAR");
        assert_eq!(stream.text(), "a STAR");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut stream = TextStream::new(&[]);
        let (text, _) = feed(&mut stream, &[b"ok \xff\xfe!"]);
        assert_eq!(text, "ok \u{fffd}\u{fffd}!");
    }

    #[test]
    fn finish_flushes_an_incomplete_character() {
        let mut stream = TextStream::new(&[]);
        stream.push(&"é".as_bytes()[..1]);
        assert_eq!(stream.finish(), "\u{fffd}");
    }
}
