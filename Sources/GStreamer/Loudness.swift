import CGStreamerShims
import Foundation

/// How loud a book is: its files measured as one programme (EBU R128).
public struct LoudnessMeasurement: Sendable, Equatable {
    /// The integrated loudness in LUFS (gated, ITU-R BS.1770); nil when every 400 ms block is below the absolute
    /// gate (-70 LUFS): silence.
    public var integrated: Double?
    /// The sample peak, linear (1 is full scale).
    public var peak: Double

    public init(integrated: Double?, peak: Double) {
        self.integrated = integrated
        self.peak = peak
    }
}

/// The loudness meter: files decoded as fast as they decode (no clock) and measured by libebur128 (loudness.c).
///
/// ```swift
/// let measured = try Loudness.measure([first, second], timeout: .seconds(600))   // blocks the calling thread
/// ```
public enum Loudness {
    /// Decodes `urls` one after another and measures them as one programme. Blocks the calling thread for as long as
    /// it takes (decoding an hour of MP3 takes a few seconds of one core); run it in the media reader's child.
    /// - Throws: ``MediaError/failed(_:)`` naming the file that could not be decoded or held no sound, or saying
    ///   that `timeout` passed.
    public static func measure(_ urls: [URL], timeout: Duration) throws(MediaError) -> LoudnessMeasurement {
        GStreamer.initialize()
        let copies: [UnsafePointer<CChar>?] = urls.map { UnsafePointer(strdup($0.absoluteString)) }
        defer { copies.forEach { free(UnsafeMutablePointer(mutating: $0)) } }
        var integrated = 0.0
        var peak = 0.0
        var error: UnsafeMutablePointer<CChar>?
        let microseconds = timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000
        let result = lectern_measure_loudness(copies, copies.count, microseconds, &integrated, &peak, &error)
        let message = error.map { String(cString: $0) }
        lectern_gst_free(error)
        switch result {
        case 0:
            return LoudnessMeasurement(integrated: integrated.isFinite ? integrated : nil, peak: peak)
        case -2:
            throw .failed("the measurement took longer than \(microseconds / 1_000_000) s")
        default:
            throw .failed(message.map { Self.readable($0) } ?? "the files could not be decoded")
        }
    }

    /// A file's URI in a message as its path.
    private static func readable(_ message: String) -> String {
        guard message.hasPrefix("file://"), let colon = message.range(of: ": "),
              let url = URL(string: String(message[..<colon.lowerBound])) else { return message }
        return url.path(percentEncoded: false) + message[colon.lowerBound...]
    }
}
