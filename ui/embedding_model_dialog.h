// Tools › File search model…: which library model searches long chat files by meaning (an
// embedding model: BERT-family files such as BGE or nomic-embed), or none (by words only).
#pragma once

#include "services/model_library.h"

#include <QDialog>
#include <QList>

class QComboBox;

namespace hearth::ui {

class EmbeddingModelDialog : public QDialog {
    Q_OBJECT
public:
    // `models`: the library's entries (those that are embedding models are offered);
    // `current`: the path chosen now ("" for none).
    EmbeddingModelDialog(const QList<app::ModelEntry>& models, const QString& current, QWidget* parent = nullptr);

    QString chosenPath() const; // "" : by words only
    QComboBox* choices() const { return m_choices; }

private:
    QComboBox* m_choices = nullptr;
};

// Whether a library entry is a model that gives embeddings only (BERT-family architectures).
bool isEmbeddingModel(const app::ModelEntry& entry);

} // namespace hearth::ui
