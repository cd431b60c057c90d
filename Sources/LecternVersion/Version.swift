/// Lectern's version: what `lecternd --version` and `lectern --version` print. The one place it is set; a release
/// changes it here.
public let lecternVersion = "0.9.0"
