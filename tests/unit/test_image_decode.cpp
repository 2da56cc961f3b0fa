// Image decoding for vision requests (hearth/image.h): PNG and JPEG written by Qt, lossless WebP
// by libwebp, a hand-made two-frame GIF; sizes refused from the header before decoding (a
// decompression bomb's 100000 x 100000 PNG); corrupt, truncated, empty and unknown input.
#include "hearth/image.h"

#include <QBuffer>
#include <QImage>
#include <QtTest>
#include <array>
#include <cstdlib>
#include <cstring>
#include <webp/encode.h>

using namespace hearth;

namespace {

std::vector<uint8_t> bytesOf(const QByteArray& a) {
    return {a.begin(), a.end()};
}

// A w x h picture of smooth colours (JPEG keeps them closely).
QImage picture(int w, int h, QImage::Format format = QImage::Format_RGB888) {
    QImage img(w, h, format);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            img.setPixelColor(x, y, QColor(40 + 4 * x, 200 - 3 * y, 120, 255 - 2 * x));
    return img;
}

QByteArray encoded(const QImage& img, const char* format, int quality = -1) {
    QByteArray out;
    QBuffer buffer(&out);
    buffer.open(QIODevice::WriteOnly);
    if (!img.save(&buffer, format, quality)) qWarning("Qt cannot write %s here", format);
    return out;
}

uint32_t crc32(const uint8_t* p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

void putBigEndian(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

// A PNG signature and an IHDR chunk (valid CRC) claiming w x h RGB pixels, then nothing.
std::vector<uint8_t> pngHeader(uint32_t w, uint32_t h) {
    std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<uint8_t> chunk = {'I', 'H', 'D', 'R'};
    putBigEndian(chunk, w);
    putBigEndian(chunk, h);
    for (uint8_t b : {8, 2, 0, 0, 0}) chunk.push_back(b); // 8-bit RGB, deflate, no interlace
    putBigEndian(out, 13);
    out.insert(out.end(), chunk.begin(), chunk.end());
    putBigEndian(out, crc32(chunk.data(), chunk.size()));
    return out;
}

// Two 1 x 1 frames: red (the global palette), then green (a local palette).
const std::vector<uint8_t> kTwoFrameGif = {
    'G',  'I', 'F',  '8', '9', 'a', 1, 0, 1, 0,    0x80, 0,    0, // screen 1 x 1, a global palette
                                                                  // of 2
    0xff, 0,   0,    0,   0,   0,                                 // red, black
    0x2c, 0,   0,    0,   0,   1,   0, 1, 0, 0,    2,    2,    0x44, 1, 0, // frame 1: index 0
    0x2c, 0,   0,    0,   0,   1,   0, 1, 0, 0x80, 0,    0xff, 0,    0, 0,
    0xff,                    // frame 2, a local palette: green, blue
    2,    2,   0x44, 1,   0, // index 0
    0x3b};

} // namespace

class TestImageDecode : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pngIsExactAndAlphaIsDropped() {
        const QImage rgba = picture(7, 5, QImage::Format_RGBA8888);
        const std::vector<uint8_t> png = bytesOf(encoded(rgba, "PNG"));
        QCOMPARE(sniffImageFormat(png), ImageFormat::Png);
        auto img = decodeImage(png);
        QVERIFY2(img.isOk(), img.status().toString().c_str());
        QCOMPARE(img->width, 7);
        QCOMPARE(img->height, 5);
        QCOMPARE(img->rgb.size(), size_t(7 * 5 * 3));
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 7; ++x) {
                const QColor c = rgba.pixelColor(x, y);
                const uint8_t* p = &img->rgb[size_t((y * 7 + x) * 3)];
                QCOMPARE(int(p[0]), c.red());
                QCOMPARE(int(p[1]), c.green());
                QCOMPARE(int(p[2]), c.blue());
            }
    }

    void jpegIsClose() {
        const QImage src = picture(32, 24);
        const std::vector<uint8_t> jpg = bytesOf(encoded(src, "JPEG", 95));
        if (jpg.empty()) QSKIP("Qt's JPEG writer (the qjpeg plugin) is not installed");
        QCOMPARE(sniffImageFormat(jpg), ImageFormat::Jpeg);
        auto img = decodeImage(jpg);
        QVERIFY2(img.isOk(), img.status().toString().c_str());
        QCOMPARE(img->width, 32);
        QCOMPARE(img->height, 24);
        int worst = 0;
        for (int y = 0; y < 24; ++y)
            for (int x = 0; x < 32; ++x) {
                const QColor c = src.pixelColor(x, y);
                const uint8_t* p = &img->rgb[size_t((y * 32 + x) * 3)];
                worst = std::max({worst, std::abs(p[0] - c.red()), std::abs(p[1] - c.green()),
                                  std::abs(p[2] - c.blue())});
            }
        QVERIFY2(worst <= 12, std::to_string(worst).c_str());
    }

    void losslessWebpIsExact() {
        std::vector<uint8_t> rgb(size_t(9 * 4 * 3));
        for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 37 + 11);
        uint8_t* out = nullptr;
        const size_t n = WebPEncodeLosslessRGB(rgb.data(), 9, 4, 9 * 3, &out);
        QVERIFY(n > 0 && out);
        const std::vector<uint8_t> webp(out, out + n);
        WebPFree(out);
        QCOMPARE(sniffImageFormat(webp), ImageFormat::Webp);
        auto img = decodeImage(webp);
        QVERIFY2(img.isOk(), img.status().toString().c_str());
        QCOMPARE(img->width, 9);
        QCOMPARE(img->height, 4);
        QCOMPARE(img->rgb, rgb);
        // Cut short: an error, not a crash.
        auto cut = decodeImage(std::span<const uint8_t>(webp).first(webp.size() / 2));
        QCOMPARE(cut.status().code(), ErrorCode::InvalidArgument);
    }

    void gifGivesItsFirstFrame() {
        QCOMPARE(sniffImageFormat(kTwoFrameGif), ImageFormat::Gif);
        auto img = decodeImage(kTwoFrameGif);
        QVERIFY2(img.isOk(), img.status().toString().c_str());
        QCOMPARE(img->width, 1);
        QCOMPARE(img->height, 1);
        QCOMPARE(img->rgb, (std::vector<uint8_t>{0xff, 0, 0}));
    }

    // Sizes come from the header and are refused before any pixel is allocated.
    void sizesAreCheckedFromTheHeader() {
        auto bomb = decodeImage(pngHeader(100000, 100000));
        QCOMPARE(bomb.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(bomb.status().message().find("100000 x 100000") != std::string::npos,
                 bomb.status().toString().c_str());
        auto many = decodeImage(pngHeader(12000, 12000)); // each side allowed, too many pixels
        QVERIFY2(many.status().message().find("pixels") != std::string::npos,
                 many.status().toString().c_str());
        const std::vector<uint8_t> png = bytesOf(encoded(picture(40, 30), "PNG"));
        ImageLimits small;
        small.maxSide = 32;
        QCOMPARE(decodeImage(png, small).status().code(), ErrorCode::InvalidArgument);
        small = {};
        small.maxPixels = 1199;
        QCOMPARE(decodeImage(png, small).status().code(), ErrorCode::InvalidArgument);
        small.maxPixels = 1200;
        QVERIFY(decodeImage(png, small).isOk());
        small = {};
        small.maxEncodedBytes = png.size() - 1;
        QCOMPARE(decodeImage(png, small).status().code(), ErrorCode::InvalidArgument);
    }

    void badInputIsAnError() {
        QCOMPARE(decodeImage({}).status().code(), ErrorCode::InvalidArgument);
        const std::vector<uint8_t> bmp = {'B', 'M', 0, 0, 0, 0, 0, 0};
        auto unknown = decodeImage(bmp);
        QVERIFY(unknown.status().message().find("PNG, JPEG, WebP or GIF") != std::string::npos);
        // A valid header with no image data, a truncated file, garbage after each magic number.
        QCOMPARE(decodeImage(pngHeader(4, 4)).status().code(), ErrorCode::InvalidArgument);
        const std::vector<uint8_t> png = bytesOf(encoded(picture(40, 30), "PNG"));
        for (size_t cut : {png.size() / 2, size_t(40), size_t(9)})
            QCOMPARE(decodeImage(std::span<const uint8_t>(png).first(cut)).status().code(),
                     ErrorCode::InvalidArgument);
        std::srand(5);
        for (const std::vector<uint8_t>& magic : std::vector<std::vector<uint8_t>>{
                 {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'},
                 {0xff, 0xd8, 0xff},
                 {'G', 'I', 'F', '8', '9', 'a'},
                 {'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'}})
            for (int round = 0; round < 50; ++round) {
                std::vector<uint8_t> junk = magic;
                for (int i = 0; i < 64 + round * 13; ++i) junk.push_back(uint8_t(std::rand()));
                auto r =
                    decodeImage(junk); // an error or (lenient JPEG) some picture; never a crash
                if (r.isOk()) QCOMPARE(r->rgb.size(), size_t(r->width) * size_t(r->height) * 3);
            }
        std::vector<uint8_t> gif = kTwoFrameGif;
        gif.resize(8); // cut inside the header
        QCOMPARE(decodeImage(gif).status().code(), ErrorCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestImageDecode)
#include "test_image_decode.moc"
