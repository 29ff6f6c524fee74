//! The `recall` binary: parses the command line and hands over to [`recall::run`].
fn main() -> std::process::ExitCode {
    recall::run()
}
