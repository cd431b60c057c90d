/// How a playbin shortens long pauses (``Playbin/skipSilence``): pauses longer than ``threshold`` keep their first
/// ``threshold`` and lose the share ``amount`` of the rest, in blocks (of each 200 ms of the file, the first
/// 1 - ``amount`` is kept), so narration keeps its rhythm. Sound is never cut: only 10 ms windows quieter than -45 dBFS
/// RMS that are not within 20 ms before a sound. Positions stay in the file's time (docs/decisions/skip-silence.md).
///
/// ```swift
/// playbin.skipSilence = SilenceSkipping(threshold: .milliseconds(500), amount: 0.75)  // a 2 s pause: 0.5 + 0.375 s
/// ```
public struct SilenceSkipping: Sendable, Equatable {
    /// Pauses longer than this (the file's time) are shortened.
    public var threshold: Duration
    /// The share (0...1) of a pause's time beyond the threshold that is removed.
    public var amount: Double

    public init(threshold: Duration, amount: Double) {
        self.threshold = threshold
        self.amount = amount
    }

    /// The threshold the element takes, seconds: 0.1 to 10.
    static let thresholdRange = 0.1...10.0
}
