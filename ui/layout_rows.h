// Emptying a row of widgets that is rebuilt from its data (the strips above the chat's input).
#pragma once

#include <QLayout>
#include <QWidget>

namespace hearth::ui {

// Takes every item out of `row`: widgets are hidden now and deleted later (a click on one of
// them may be what asked for the rebuild), the items themselves at once.
inline void clearRow(QLayout* row) {
    while (QLayoutItem* item = row->takeAt(0)) {
        if (QWidget* w = item->widget()) {
            w->hide();
            w->deleteLater();
        }
        delete item;
    }
}

} // namespace hearth::ui
