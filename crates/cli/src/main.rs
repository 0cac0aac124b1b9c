//! `kvik-cli`: see the library documentation (`kvik_cli`) and `kvik-cli --help`.

#![forbid(unsafe_code)]

fn main() {
    std::process::exit(kvik_cli::run::main(std::env::args_os().skip(1).collect()));
}
