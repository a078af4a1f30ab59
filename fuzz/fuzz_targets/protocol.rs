//! The plugin protocol's decoders: any bytes as a plugin's metadata, a request and a reply (what
//! the worker process reads from foreign code).
//!
//! Must hold: no panic; every message a decoder accepts encodes to one it decodes to the same
//! value; a decoded plan reply either builds a plan or is refused with a structural error, and a
//! plan built goes through every pass (see `pipeweave_fuzz::check_plan`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_fuzz::check_plan;
use pipeweave_plugin_api::protocol::{
    Response, decode_metadata, decode_request, decode_response, encode_metadata, encode_request,
    encode_response,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(meta) = decode_metadata(data) {
        assert_eq!(decode_metadata(&encode_metadata(&meta)), Ok(meta));
    }
    if let Ok(request) = decode_request(data) {
        assert_eq!(decode_request(&encode_request(&request)), Ok(request));
    }
    match decode_response(data) {
        Ok(response) => {
            assert_eq!(
                decode_response(&encode_response(&response)).as_ref(),
                Ok(&response)
            );
            if let Response::Plan(message) = response
                && let Ok(plan) = message.into_plan()
            {
                let _ = check_plan(&plan);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
