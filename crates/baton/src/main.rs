fn main() -> std::process::ExitCode {
    baton::run()
}
