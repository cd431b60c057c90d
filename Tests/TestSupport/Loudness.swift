import Foundation

/// Sound at a known level, and the loudness of what was rendered, measured independently of Lectern: FFmpeg's
/// `ebur128` filter (EBU R128, its own implementation; Lectern's meter is libebur128).
public enum R128 {
    /// A mono 16-bit WAV file (44.1 kHz) of `seconds` of a 1 kHz tone whose amplitude swells and fades twice a second
    /// (speech-like: loudness gating has quieter and louder blocks to weigh), peaking at `peak` (full scale is 1).
    public static func tone(_ url: URL, seconds: Double, peak: Double) throws {
        let rate = 44_100.0
        let samples = (0..<Int(seconds * rate)).map { n -> Int16 in
            let t = Double(n) / rate
            let envelope = 0.55 + 0.45 * sin(2 * Double.pi * 2 * t)
            return Int16((32_767 * peak * envelope * sin(2 * Double.pi * 1_000 * t)).rounded())
        }
        try AudioFiles.wavData(samples).write(to: url)
    }

    /// The integrated loudness of an audio file in LUFS, as FFmpeg's `ebur128` filter measures it.
    public static func integratedLoudness(of url: URL) throws -> Double {
        let result = try Subprocess.run("ffmpeg", ["-nostdin", "-hide_banner", "-nostats", "-i", url.path,
                                                   "-af", "ebur128", "-f", "null", "-"], timeout: .seconds(60))
        // The summary's "I:  -23.0 LUFS" line (the last one: the running lines come before it).
        let line = result.stderr.split(separator: "\n").last { $0.trimmingCharacters(in: .whitespaces).hasPrefix("I:") }
        guard result.status == 0, let line,
              let value = Double(line.split(separator: " ").dropFirst().first.map(String.init) ?? "") else {
            throw AudioFiles.ToolFailed(command: ["ffmpeg", "-af", "ebur128", url.path], status: result.status, output: result.stderr)
        }
        return value
    }
}
