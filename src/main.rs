/// JSON, HTTP and actor messages allocate on every request from many threads;
/// mimalloc's thread-local heaps avoid glibc malloc's lock contention there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> std::process::ExitCode {
    freight::telemetry::install_crypto_provider();
    let cli = match freight::cli::parse() {
        Ok(cli) => cli,
        Err(error) => {
            eprintln!("error: {error:#}");
            return std::process::ExitCode::from(2);
        }
    };
    match freight::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
