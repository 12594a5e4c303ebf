//! moto's S3-compatible server (`moto_server` from the venv's `moto[server]`), started on a
//! free local port for one test and stopped when dropped, with boto3 to fill it.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::interop::run_python;

/// A running moto server (killed on drop).
#[derive(Debug)]
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const UPLOAD: &str = r#"
import os, sys, boto3
endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                  aws_secret_access_key="testing", region_name="us-east-1")
s3.create_bucket(Bucket=bucket)
for p in sys.argv[3:]:
    s3.upload_file(p, bucket, os.path.basename(p))
"#;

impl Moto {
    /// Start `moto_server` from the venv of `python` and wait until it accepts connections.
    pub fn start(python: &Path) -> Moto {
        let server = python.with_file_name("moto_server");
        assert!(
            server.exists(),
            "{}: missing (moto[server] is in xtask/fixtures/requirements.txt)",
            server.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free local port");
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", server.display()));
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(60), "moto did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        moto
    }

    /// Create `bucket` and upload `files` into it, each under its file name.
    pub fn upload(&self, python: &Path, bucket: &str, files: &[&Path]) {
        let mut args = vec![self.endpoint.clone(), bucket.to_owned()];
        args.extend(files.iter().map(|p| p.to_string_lossy().into_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_python(python, UPLOAD, &args);
    }

    /// object_store's configuration keys for this server.
    pub fn options(&self) -> Vec<(String, String)> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
            ("aws_region", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The same as the `AWS_*` environment variables a program reads.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }
}
