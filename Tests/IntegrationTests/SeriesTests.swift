import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// Series in their order: named by the folders' layout, set by hand, listed, searched, shown, played on.
    @Suite struct Series {
        /// A file whose tags name its series (ID3 TXXX, an M4B's movement atoms), opened: its book is in that series.
        @Test(arguments: ["ID3 TXXX", "MP4 movement"])
        func theTagsNameTheSeriesOfTheBookOpened(_ name: String) async throws {
            let folder = try TemporaryDirectory(prefix: "lectern-series-tags")
            defer { folder.remove() }
            let tagged = SeriesTags.named(name)
            let file = try await offThePool { try SeriesTags.file(tagged, in: folder.url) }
            try await DaemonFixture.with { d in
                try await d.openURI(file)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let book = try #require(try await d.allBooks().first?["id"]?.int64)
                let details = try await d.getBook(book)
                #expect(details["series"] == .string(tagged.series ?? "") && details["series_part"] == .string(tagged.part ?? ""),
                        "\(details)")
                #expect(try await d.metadata()["lectern:series"] == tagged.series.map(DBusValue.string))
            }
        }

        @Test func aSeriesLaidOutInFoldersIsListedInOrderAndPlaysOn() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-series")
            defer { root.remove() }
            let names = ["02 - The Light Fantastic", "01 - The Colour of Magic", "10 - Guards! Guards!"]
            try await offThePool {
                for (index, name) in names.enumerated() {
                    let folder = root.appending("Pratchett/Discworld/\(name)")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try AudioFiles.ogg(folder.appendingPathComponent("1.ogg"), seconds: 1.5, frequency: 330 + 110 * index)
                }
            }
            try await DaemonFixture.with(daemonArguments: ["--series-continue"]) { d in
                var r = try await d.lectern("import", root.path)
                #expect(r.status == 0, "lectern import: \(r)")
                r = try await d.lectern("series")
                #expect(r.stdout == "Discworld  (3 books)", "lectern series: \(r)")
                r = try await d.lectern("series", "discworld")
                let lines = r.stdout.components(separatedBy: "\n")
                #expect(lines.count == 3 && lines[0].hasPrefix("#01  ") && lines[0].contains("The Colour of Magic")
                        && lines[1].hasPrefix("#02  ") && lines[2].hasPrefix("#10  "), "lectern series discworld: \(r)")
                r = try await d.lectern("book", "list", "--sort", "series")
                #expect(r.stdout.components(separatedBy: "\n").first?.contains("The Colour of Magic") == true, "\(r)")

                let colour = try await d.bookID(titled: "01 - The Colour of Magic")
                let light = try await d.bookID(titled: "02 - The Light Fantastic")
                #expect(try await d.getBook(colour)["series"] == .string("Discworld"))
                #expect(try await d.getBook(colour)["series_part"] == .string("01"))

                // By hand: another series, kept by the next import.
                r = try await d.lectern("book", "series", "10 - Guards! Guards!", "City Watch", "--part", "1")
                #expect(r.status == 0, "lectern book series: \(r)")
                #expect(try await d.lectern("import", root.path).status == 0)
                #expect(try await d.lectern("series").stdout == "City Watch  (1 book)\nDiscworld  (2 books)")
                r = try await d.lectern("find", "city", "watch")
                #expect(r.stdout.contains("Guards! Guards!") && !r.stdout.contains("Colour"), "lectern find city watch: \(r)")
                r = try await d.lectern("book", "series", "10 - Guards! Guards!", "--part", "1")
                #expect(r.status == 64, "a part needs a series: \(r)")

                // Played to its end, a book of the series is followed by the next one, which says its series.
                try await d.lib("ActivateBook", [.int64(colour), .boolean(true)])
                #expect(try await d.waitForCurrentBook(light, timeout: .seconds(10)) == light, "\(d.log)")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let metadata = try await d.metadata()
                #expect(metadata["lectern:series"] == .string("Discworld") && metadata["lectern:seriesPart"] == .string("02"),
                        "\(metadata)")
                #expect(try await d.getBook(colour)["finished"] == .boolean(true))
                // Set by hand on the current book: its Metadata says so at once.
                #expect(try await d.lectern("book", "series", "02 - The Light Fantastic", "Rincewind", "--part", "2").status == 0)
                let changed = try await d.waitForProperty("Metadata") {
                    $0.stringKeyedDictionary?["lectern:series"] == .string("Rincewind")
                }.stringKeyedDictionary
                #expect(changed?["lectern:series"] == .string("Rincewind") && changed?["lectern:seriesPart"] == .string("2"))
            }
        }
    }
}
