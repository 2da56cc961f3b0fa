// The library's model cards (ModelCardDelegate) in a list view: each card's lines (name; family,
// parameters, quantization, size; the fit verdict and the Vision / Tools / Thinking badges), a
// file that cannot be used saying why, cards tall enough for three lines, both themes drawn, and
// the library's own badges for a real file. Screenshot: model-cards.png.
#include "model_card_delegate.h"
#include "services/model_list_model.h"
#include "chat_steps.h"
#include "test_support.h"

#include <QListView>
#include <QStandardItemModel>
#include <QtTest>

using namespace hearth;
using M = app::ModelListModel;

namespace {

QStandardItem* card(const QString& title, const QString& arch, const QString& params, const QString& quant,
                    qint64 bytes, const QString& fit, const QStringList& badges, const QString& error = {}) {
    auto* item = new QStandardItem(title);
    app::ModelEntry e;
    e.title = title;
    e.error = error;
    item->setData(QVariant::fromValue(e), M::EntryRole);
    item->setData(arch, M::ArchitectureRole);
    item->setData(params, M::ParametersTextRole);
    item->setData(quant, M::QuantizationRole);
    item->setData(QVariant::fromValue<qint64>(bytes), M::SizeRole);
    item->setData(fit, M::FitRole);
    item->setData(badges, M::BadgesRole);
    item->setData(error, M::ErrorRole);
    return item;
}

} // namespace

class TestModelCards : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cardsShowWhatAModelIsAndCanDo() {
        QLocale::setDefault(QLocale::c());
        QStandardItemModel model;
        model.appendRow(card(QStringLiteral("Qwen3.5 4B Instruct"), QStringLiteral("qwen35"), QStringLiteral("4.2B"),
                             QStringLiteral("Q4_K_M"), 2'710'000'000, QStringLiteral("fits on GPU"),
                             {QStringLiteral("Vision"), QStringLiteral("Tools"), QStringLiteral("Thinking")}));
        model.appendRow(card(QStringLiteral("Llama 3.2 1B Instruct"), QStringLiteral("llama"), QStringLiteral("1.2B"),
                             QStringLiteral("Q8_0"), 1'320'000'000, QStringLiteral("won't fit"), {QStringLiteral("Tools")}));
        model.appendRow(card(QStringLiteral("half-downloaded.gguf"), QString(), QString(), QString(), 0, QString(), {},
                             QStringLiteral("the file ends inside tensor 12's data")));
        QListView view;
        view.setModel(&model);
        auto* delegate = new ui::ModelCardDelegate(&view);
        view.setItemDelegate(delegate);
        view.resize(520, 330);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));

        QCOMPARE(ui::ModelCardDelegate::detailLine(model.index(0, 0)), QStringLiteral("qwen35 · 4.2B · Q4_K_M · 2.52 GiB"));
        QCOMPARE(ui::ModelCardDelegate::detailLine(model.index(1, 0)), QStringLiteral("llama · 1.2B · Q8_0 · 1.23 GiB"));
        QCOMPARE(ui::ModelCardDelegate::detailLine(model.index(2, 0)),
                 QStringLiteral("cannot be used: the file ends inside tensor 12's data"));
        QStyleOptionViewItem option;
        option.initFrom(&view);
        const QSize hint = delegate->sizeHint(option, model.index(0, 0));
        QVERIFY2(hint.height() >= 3 * view.fontMetrics().height(), qPrintable(QString::number(hint.height())));
        QCOMPARE(view.visualRect(model.index(1, 0)).height(), hint.height());

        // Drawn: the selected card and a badge carry the highlight's tint; the screenshot is looked at.
        view.setCurrentIndex(model.index(0, 0));
        const QImage shot = view.grab().toImage();
        QVERIFY(shot.save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("model-cards.png"))));
        QSet<QRgb> colours;
        for (int y = 0; y < shot.height(); y += 3)
            for (int x = 0; x < shot.width(); x += 3) colours.insert(shot.pixel(x, y));
        QVERIFY2(colours.size() > 20, "the cards drew nothing");
        QPalette dark = view.palette();
        dark.setColor(QPalette::Base, QColor(0x20, 0x22, 0x26));
        dark.setColor(QPalette::Text, QColor(0xe8, 0xe8, 0xe8));
        view.setPalette(dark);
        QVERIFY(view.grab().save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("model-cards-dark.png"))));
        QLocale::setDefault(QLocale::system());
    }
};

QTEST_MAIN(TestModelCards)
#include "test_model_cards.moc"
