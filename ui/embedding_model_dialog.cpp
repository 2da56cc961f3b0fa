// The file search model's dialog (see embedding_model_dialog.h).
#include "embedding_model_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QVBoxLayout>

namespace hearth::ui {

bool isEmbeddingModel(const app::ModelEntry& entry) {
    static const QStringList encoders = {QStringLiteral("bert"), QStringLiteral("nomic-bert")};
    return entry.isUsable() && encoders.contains(entry.architecture);
}

EmbeddingModelDialog::EmbeddingModelDialog(const QList<app::ModelEntry>& models, const QString& current, QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("File search model"));
    auto* layout = new QVBoxLayout(this);
    auto* text = new QLabel(tr("Files too long to give the model whole are searched for each question. With an "
                               "embedding model the search finds parts by meaning as well as by their words."),
                            this);
    text->setWordWrap(true);
    layout->addWidget(text);
    m_choices = new QComboBox(this);
    m_choices->setObjectName(QStringLiteral("embeddingModel"));
    m_choices->addItem(tr("None (search by words only)"), QString());
    bool found = current.isEmpty();
    for (const app::ModelEntry& m : models) {
        if (!isEmbeddingModel(m)) continue;
        m_choices->addItem(m.displayName() + QStringLiteral(" · ") + m.fileName, m.path);
        found |= m.path == current;
    }
    if (!found) m_choices->addItem(tr("%1 (not in the library)").arg(current), current);
    m_choices->setCurrentIndex(std::max(0, m_choices->findData(current)));
    layout->addWidget(m_choices);
    if (m_choices->count() == 1) {
        auto* none = new QLabel(tr("The library has no embedding model: download one such as "
                                   "BAAI/bge-small-en-v1.5 or nomic-ai/nomic-embed-text-v1.5 (GGUF) on the Models page."),
                                this);
        none->setWordWrap(true);
        layout->addWidget(none);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString EmbeddingModelDialog::chosenPath() const { return m_choices->currentData().toString(); }

} // namespace hearth::ui
