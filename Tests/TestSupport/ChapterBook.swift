import Foundation

/// The chapters of the chapter test files (GStreamerTests' and MP4Tests' fixtures): three chapters over 30 s of a
/// sine, one title with non-ASCII letters, written by ffmpeg from an ;FFMETADATA1 file.
///
/// ```swift
/// let input = try ChapterBook.ffmpegInput(chaptersFile: root.appendingPathComponent("chapters.txt"))
/// try AudioFiles.ffmpeg(input + ["-c:a", "aac", root.appendingPathComponent("book.m4b").path])
/// ```
public enum ChapterBook {
    public static let titles = ["Chapter 1", "Chapitre 2 — L’été", "Three"]
    public static let starts: [Duration] = [.zero, .seconds(10), .milliseconds(20_500)]
    public static let duration: Duration = .seconds(30)
    public static var ends: [Duration] { Array(starts.dropFirst()) + [duration] }

    /// An ;FFMETADATA1 file with `chapters` (title, start ms, end ms).
    public static func metadata(_ chapters: [(title: String, start: Int, end: Int)]) -> String {
        var text = ";FFMETADATA1\ntitle=A Book\n"
        for chapter in chapters {
            text += "[CHAPTER]\nTIMEBASE=1/1000\nSTART=\(chapter.start)\nEND=\(chapter.end)\ntitle=\(chapter.title)\n"
        }
        return text
    }

    /// The ;FFMETADATA1 text of this book's chapters.
    public static var expectedMetadata: String {
        let milliseconds = starts.map { Int($0 / .milliseconds(1)) } + [Int(duration / .milliseconds(1))]
        return metadata(titles.indices.map { (titles[$0], milliseconds[$0], milliseconds[$0 + 1]) })
    }

    /// The 30 s sine without chapters, as ffmpeg input arguments.
    public static let sine = ["-f", "lavfi", "-i", "sine=frequency=440:duration=30"]

    /// ffmpeg input arguments for the book: the sine and its chapters (written to `chaptersFile`); add the codec
    /// and the output.
    public static func ffmpegInput(chaptersFile: URL) throws -> [String] {
        try expectedMetadata.write(to: chaptersFile, atomically: true, encoding: .utf8)
        return sine + ["-i", chaptersFile.path, "-map_metadata", "1", "-map_chapters", "1"]
    }
}
