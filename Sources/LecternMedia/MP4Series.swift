import Foundation
import GStreamer
import MP4

extension MediaInfo {
    /// Whether `url` names an MP4 file (M4B, M4A, MP4; AAC, which may be in MP4), whose chapters and series the MP4
    /// module reads: GStreamer 1.22's discoverer gives neither.
    static func isMP4(_ url: URL) -> Bool {
        url.isFileURL && ["m4b", "m4a", "mp4", "aac"].contains(url.pathExtension.lowercased())
    }

    /// For an MP4 file, the series and part of its iTunes items (``MP4SeriesTags``): a freeform `SERIES` and
    /// `SERIES-PART` first, else the movement (`©mvn`, `©mvi`). Anything else, or a file the MP4 module cannot
    /// read, is left as it is.
    mutating func readMP4Series(of url: URL) {
        guard Self.isMP4(url), let tags = try? MP4SeriesTags.read(of: url) else { return }
        (series, seriesPart) = Self.series(from: [(tags.series, tags.seriesPart),
                                                  (tags.movementName, tags.movementNumber.map(String.init))])
    }
}
