import FolderWatch
import Foundation
import Testing

@Suite struct MountsTests {
    @Test func aPathIsOnTheLongestMountAboveIt() {
        let mounts = Mounts(points: ["/", "/media/me/USB", "/media/me/USB/Deep", "/srv"])
        #expect(mounts.mountPoint(of: "/media/me/USB/Dune") == "/media/me/USB")
        #expect(mounts.mountPoint(of: "/media/me/USB/Deep/Dune/Part 1") == "/media/me/USB/Deep")
        #expect(mounts.mountPoint(of: "/media/me/USB") == "/media/me/USB")
        #expect(mounts.mountPoint(of: "/media/me/USBX/Dune") == "/")
        #expect(mounts.mountPoint(of: "/srv") == "/srv")
        #expect(mounts.mountPoint(of: "/home/me/Books") == "/")
        #expect(mounts.mountPoint(of: "/") == "/")
        // Slashes doubled or at the end, as NSString's path components read them.
        #expect(mounts.mountPoint(of: "/media/me//USB/Dune/") == "/media/me/USB")
        #expect(mounts.mountPoint(of: "/srv/") == "/")
        #expect(mounts.mountPoint(of: "relative/path") == "/")
    }
}
