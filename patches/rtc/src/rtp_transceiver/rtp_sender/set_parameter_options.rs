/// Options for set_parameters() operation.
///
/// Currently an empty placeholder to allow for future extensibility.
///
/// ## Specifications
///
/// * [W3C](https://www.w3.org/TR/webrtc/#rtcsetparameteroptions-dictionary)
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct RTCSetParameterOptions {}
