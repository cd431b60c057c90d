import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// `lectern undo`, `lectern history` and `lectern stats`.
    @Suite struct HistoryCLI {
        /// Stop (playerctl's, a panel's menu) returns to the start of the chapter, as MPRIS says; the place before it is a
        /// bookmark "Stopped" and an undo step, so that nothing is lost by the button. A stop at the chapter's start
        /// leaves no bookmark.
        @Test func stopLeavesItsPlaceAsABookmarkAndAnUndoStep() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                try await d.setPosition(6_000_000)
                let stop = try await d.playerctl("stop")
                #expect(stop.status == 0, "playerctl stop: \(stop)")
                #expect(try await d.waitForStatus("Stopped") == "Stopped")
                #expect(try await d.position() == 0, "MPRIS's Stop: back to the start")

                let second = try await d.fileID(of: book, endingWith: "/longbook/2.ogg")
                let marks = try await poll(timeout: .seconds(3)) { try await d.bookmarks(of: book) } until: { !$0.isEmpty }
                #expect(marks.count == 1 && marks.first?["kind"] == .string("stop") && marks.first?["title"] == .string("Stopped")
                        && marks.first?["file"]?.int64 == second && near(marks.first?["offset"]?.int64, 6_000_000, within: 500_000),
                        "\(marks)")
                let list = try await d.lectern("undo", "--list")
                #expect(list.status == 0 && list.stdout.contains("in file 2 (before a stop)"), "\(list)")
                let undo = try await d.lectern("undo")
                #expect(undo.status == 0 && undo.stdout.contains("file 2"), "\(undo)")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(near(try await d.position(), 6_000_000, within: 500_000))

                // Stopped again at the start of the chapter: nothing to keep.
                try await d.setPosition(300_000)
                try await d.call("Stop")
                #expect(try await d.waitForStatus("Stopped") == "Stopped")
                try await d.signals.barrier()
                #expect(try await d.bookmarks(of: book).count == 1)
            }
        }

        @Test func theCLIUndoesAndExportsTheHistory() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                #expect(try await d.lectern("undo").status == 1, "nothing current")
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.waitForPosition(atLeast: 1_000_000)
                try await d.listen("JumpToFile", [.int32(2), .int64(3_000_000)])
                try await d.waitForUndoStack(book, count: 1)
                try await d.waitForPosition(atLeast: 3_600_000)
                let list = try await d.lectern("undo", "--list")
                #expect(list.status == 0 && list.stdout.contains("in file 1 (before a jump)"), "\(list)")
                let undo = try await d.lectern("undo")
                #expect(undo.status == 0 && undo.stdout.hasPrefix("back to 0:0") && undo.stdout.contains("file 1"), "\(undo)")
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                let again = try await d.lectern("undo")
                #expect(again.status == 1 && again.stderr.contains("nothing to undo"), "\(again)")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                let csv = try await d.lectern("history", "--csv")
                let lines = csv.stdout.components(separatedBy: "\n")
                #expect(csv.status == 0 && lines.first == "book,title,started,ended,from,to,listened,content,speed,silence", "\(csv)")
                #expect(lines.count >= 2 && lines.dropFirst().allSatisfy { $0.hasPrefix("\(book),longbook,") }, "\(csv)")
                let json = try await d.lectern("history", "--json", "--days", "1")
                let sessions = (try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) as? [[String: Any]]
                #expect(sessions?.count == lines.count - 1, "\(json)")
                #expect(sessions?.first?["book"] as? Int64 == book || sessions?.first?["book"] as? Int == Int(book), "\(json)")
                #expect((sessions?.first?["listened"] as? Double ?? 0) > 0, "\(json)")
                let text = try await d.lectern("history")
                #expect(text.status == 0 && text.stdout.contains("longbook"), "\(text)")
                let stats = try await d.lectern("stats")
                #expect(stats.status == 0 && stats.stdout.hasPrefix("listened ") && stats.stdout.contains("per book:\n"), "\(stats)")
                let statsJSON = try await d.lectern("stats", "--json", "--days", "7")
                #expect((try? JSONSerialization.jsonObject(with: Data(statsJSON.stdout.utf8))) as? [String: Any] != nil, "\(statsJSON)")
                // Usage errors are the CLI's, before the daemon is asked.
                #expect(try await d.lectern("stats", "--days", "0").status == 64)
                #expect(try await d.lectern("history", "--csv", "--json").status == 64)
            }
        }
    }
}
