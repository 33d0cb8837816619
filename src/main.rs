use clap::Parser;

#[actix_web::main]
async fn main() -> std::process::ExitCode {
    freight::telemetry::install_crypto_provider();
    let cli = freight::cli::Cli::parse();
    match freight::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
