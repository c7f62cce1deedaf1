fn main() -> std::process::ExitCode {
    baton_cli::run()
}
